//! The runner: creates a run, then drives it from the blackboard — claim a pending brief, run its agent
//! through a runtime, record the outcome, and let [`crate::advance`] turn finished briefs into the next
//! tier's briefs, gates, verdicts and merges. Everything it knows it reads back from the blackboard each
//! turn, so [`Engine::drive`] is also how a killed run resumes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_core::config::TeamConfig;
use agency_core::event::payload::{self, BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::{GateDecision, GateKind};
use agency_core::tiers::{BriefRole, PLAN_TITLE, RUN_WORKSTREAM};
use agency_core::{Brief, BriefId, BriefStatus, RunId, Tier};
use agency_exec::runtime::personality::Personalities;
use agency_exec::runtime::{Access, AgentLimits, AgentStop, AgentTask, Ending, Runtime, RuntimeError};
use agency_exec::{Repo, WorktreeSweep};
use agency_llm::{CancelToken, Provider};
use agency_store::{Blackboard, Change, NewArtifact, NewRun, Run, RunStatus, WriteBatch};

use crate::branches::RunBranches;
use crate::crew::{AgentEnd, Launches};
use crate::error::{EngineError, Result};
use crate::hooks::{Reviewer, RunnerHooks};
use crate::task::{Input, call_meta, output_check, render_prompt, stamp_runner_facts, system_blocks};

/// How the runner behaves, beyond team.yaml.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Approve every gate at once (the offline demo, tests); a human decides otherwise.
    pub auto_approve: bool,
    /// This runner's name in claims and logs.
    pub worker: String,
    /// How often the blackboard is polled while waiting.
    pub poll: Duration,
    /// Where brief worktrees are made (`.agency/worktrees`).
    pub worktrees: PathBuf,
    /// Limits for each agent.
    pub limits: AgentLimits,
    /// Invalid structured outputs fed back to the model before the brief counts as failed.
    pub output_retries: u32,
    /// How long a gate waits for a decision, instead of team.yaml's `visibility.gate_timeout_minutes`
    /// (tests that need seconds).
    pub gate_timeout: Option<Duration>,
    /// How long an agent may record nothing before an ALERT, instead of team.yaml's
    /// `runner.agent_idle_minutes` (tests that need seconds).
    pub agent_idle: Option<Duration>,
    /// Paths no agent's sandbox shows, besides the repository's `.agency/`, [`EngineOptions::worktrees`] and
    /// the user's credentials: the blackboard when it is kept elsewhere.
    pub hidden: Vec<PathBuf>,
    /// Notified when a human decision was written (`agency approve`, ... poke the runner's gate service):
    /// the runner then looks at the blackboard at once instead of at the end of its poll interval.
    pub wake: Option<Arc<tokio::sync::Notify>>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            auto_approve: false,
            worker: crate::Role::Driver.name_here(),
            poll: Duration::from_millis(200),
            worktrees: PathBuf::from(".agency/worktrees"),
            limits: AgentLimits::default(),
            output_retries: 2,
            gate_timeout: None,
            agent_idle: None,
            hidden: Vec::new(),
            wake: None,
        }
    }
}

/// Everything the runner works with. Cloned for every agent and sign-off it starts, so what it holds is
/// shared (a deep copy of the configuration per clone was a few hundred allocations each time).
#[derive(Debug, Clone)]
pub struct Engine {
    pub(crate) store: Arc<dyn Blackboard>,
    pub(crate) config: Arc<TeamConfig>,
    pub(crate) repo: Repo,
    pub(crate) runtimes: Arc<BTreeMap<Tier, Arc<dyn Runtime>>>,
    pub(crate) providers: Arc<BTreeMap<Tier, Arc<dyn Provider>>>,
    pub(crate) options: Arc<EngineOptions>,
    pub(crate) ledger: Option<crate::budget::SharedLedger>,
    /// The run's approved plan, parsed once (see [`crate::advance::approved`]).
    pub(crate) plan_cache: Arc<Mutex<Option<Arc<crate::advance::ApprovedPlan>>>>,
    /// The earliest time a pass must run even if nothing changed on the blackboard (a T3 mesh timeout).
    pub(crate) wake: Arc<Mutex<Option<chrono::DateTime<chrono::Utc>>>>,
    /// The reminders sent for each gate that waits for a human past the gate timeout.
    reminders: Arc<Mutex<std::collections::HashMap<agency_core::GateId, i64>>>,
    /// The run's shared branches known to exist.
    pub(crate) known_branches: crate::branches::KnownBranches,
    /// Each implementer's diff, kept for its slice's sign-off.
    pub(crate) slice_diffs: crate::slice_diffs::SliceDiffs,
    /// The worktrees and clean checkouts this runner is done with, removed together once per pass.
    pub(crate) worktree_sweep: WorktreeSweep,
    /// The talent pool: whose voice each agent speaks in, after agency's own rules.
    pub(crate) personalities: Arc<Personalities>,
}

/// How a drive ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriveOutcome {
    /// The run's final status.
    pub status: RunStatus,
    /// The branch to review, when the run succeeded.
    pub branch: Option<String>,
}

impl Engine {
    /// A runner over `store` for the repository `repo`. `runtimes` and `providers` must cover every tier.
    pub fn new(
        store: Arc<dyn Blackboard>,
        config: TeamConfig,
        repo: Repo,
        runtimes: BTreeMap<Tier, Arc<dyn Runtime>>,
        providers: BTreeMap<Tier, Arc<dyn Provider>>,
        options: EngineOptions,
    ) -> Result<Self> {
        for tier in Tier::ALL {
            if !runtimes.contains_key(&tier) {
                return Err(EngineError::Config(format!("no runtime for {tier}")));
            }
            if !providers.contains_key(&tier) {
                return Err(EngineError::Config(format!("no model for {tier}")));
            }
        }
        Ok(Engine {
            store,
            config: Arc::new(config),
            worktree_sweep: WorktreeSweep::new(repo.clone()),
            repo,
            runtimes: Arc::new(runtimes),
            providers: Arc::new(providers),
            options: Arc::new(options),
            ledger: None,
            plan_cache: Arc::new(Mutex::new(None)),
            wake: Arc::new(Mutex::new(None)),
            reminders: Arc::default(),
            known_branches: crate::branches::KnownBranches::default(),
            slice_diffs: crate::slice_diffs::SliceDiffs::default(),
            personalities: Arc::new(Personalities::defaults()),
        })
    }

    /// Gives the agents the personalities of `pool` (team.yaml's `personalities`, loaded and checked by the
    /// caller) instead of agency's own five.
    pub fn with_personalities(mut self, pool: Personalities) -> Self {
        self.personalities = Arc::new(pool);
        self
    }

    /// The system prompt text of the personality a brief's agent speaks in: the one its brief names, else
    /// the registry's for its tier and its workstream's domain, else agency's own for the tier. A name the
    /// pool does not hold (a planner's typo) falls back to the tier's, with a log line saying so.
    fn personality_prompt(&self, brief: &Brief) -> Result<Option<String>> {
        // T1 plans and accepts for the whole run: its domain is the registry's `strategy`.
        let domain = if brief.tier == Tier::T1 {
            "strategy".to_string()
        } else {
            crate::advance::approved(self, brief.run)?
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

    /// Shares the run's budget ledger (the one the metered providers charge), so that an approved
    /// `budget` gate can raise its limits.
    pub fn with_ledger(mut self, ledger: crate::budget::SharedLedger) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// The blackboard.
    pub fn store(&self) -> &Arc<dyn Blackboard> {
        &self.store
    }

    /// Creates a run for `goal` at the repository's current head and writes T1's planning brief.
    pub fn start(&self, goal: &str) -> Result<Run> {
        let base = self.repo.head_rev()?;
        let mut new = NewRun::new(goal, self.repo.root().display().to_string());
        new.id = crate::branches::unused_run_id(&self.repo, RunId::new)?;
        new.base_rev = Some(base.clone());
        new.config = serde_json::to_value(&*self.config).unwrap_or_default();
        let run = self.store.create_run(new)?;
        crate::forge::remember_base(self, &run)?;
        self.finish_start(&run)?;
        Ok(run)
    }

    /// The rest of a run's start after its record: its integration branch and T1's plan brief. A runner
    /// killed between the record and the brief left a run with nothing to do, which a resume would have
    /// driven for ever; [`Engine::drive`] calls this first, so such a run starts where it stopped. Does
    /// nothing when the plan brief exists.
    fn finish_start(&self, run: &Run) -> Result<()> {
        // Every T1 brief of the run's own workstream hangs under its first plan brief.
        if self
            .store
            .count_briefs(run.id, RUN_WORKSTREAM, Some(Tier::T1), &[])?
            > 0
        {
            return Ok(());
        }
        let base = match &run.base_rev {
            Some(base) => base.clone(),
            None => self.repo.head_rev()?,
        };
        self.branches(run.id).ensure_integration(&base)?;
        let goal = run.goal.as_str();
        let plan = Brief {
            id: BriefId::new(),
            run: run.id,
            parent: None,
            tier: Tier::T1,
            workstream: RUN_WORKSTREAM.into(),
            title: PLAN_TITLE.into(),
            // The registry's T1 personality (domain `strategy`) is chosen when its agent starts.
            personality: None,
            goal_anchor: goal.to_string(),
            instructions: format!("Plan the work for this goal: {goal}"),
            inputs: Vec::new(),
            variety: None,
            contract: None,
            retry_budget: self.config.retry.base_budget,
            attempt: 0,
            depends_on: Vec::new(),
            branch: None,
            worktree: None,
            status: BriefStatus::Pending,
            teachback: agency_core::TeachbackState::Pending,
            claimed_by: None,
            created_at: chrono::Utc::now(),
        };
        self.store.insert_brief(&plan)?;
        self.log(
            run.id,
            Some(Tier::T1),
            "PLAN_START",
            format!("Assessing scope: \"{goal}\""),
        )?;
        Ok(())
    }

    /// Asks for a pass over the run at `at` at the latest, even if nothing changes before then.
    pub(crate) fn wake_at(&self, at: chrono::DateTime<chrono::Utc>) -> Result<()> {
        let mut wake = self
            .wake
            .lock()
            .map_err(|_| EngineError::State("timer poisoned".into()))?;
        if wake.is_none_or(|w| at < w) {
            *wake = Some(at);
        }
        Ok(())
    }

    /// Whether a timer asked for with [`Engine::wake_at`] is set and not yet due.
    pub(crate) fn has_timer(&self) -> Result<bool> {
        Ok(self
            .wake
            .lock()
            .map_err(|_| EngineError::State("timer poisoned".into()))?
            .is_some())
    }

    /// Whether a timer asked for with [`Engine::wake_at`] is due; a due timer is cleared.
    pub(crate) fn timer_due(&self) -> Result<bool> {
        let mut wake = self
            .wake
            .lock()
            .map_err(|_| EngineError::State("timer poisoned".into()))?;
        let due = wake.is_some_and(|w| chrono::Utc::now() >= w);
        if due {
            *wake = None;
        }
        Ok(due)
    }

    /// Writes a tier-level log line (what `agency watch` shows at the normal level).
    pub(crate) fn log(&self, run: RunId, tier: Option<Tier>, tag: &str, message: String) -> Result<()> {
        self.log_at(run, tier, "normal", tag, message)
    }

    /// Writes a log line at `level` (`normal`, or `verbose` for detail `agency watch --verbose` adds).
    pub(crate) fn log_at(
        &self,
        run: RunId,
        tier: Option<Tier>,
        level: &str,
        tag: &str,
        message: String,
    ) -> Result<()> {
        let mut event = NewEvent::typed(run, EventPayload::Log(LogLine::new(level, Some(tag), message)));
        event.tier = tier;
        self.store.append_event(event)?;
        Ok(())
    }

    pub(crate) fn branches(&self, run: RunId) -> RunBranches {
        RunBranches::new(
            self.repo.clone(),
            run,
            &self.options.worktrees,
            self.known_branches.clone(),
            self.worktree_sweep.clone(),
        )
    }

    /// What is left at the end of every turn of a runner's loop, and whenever a drive or a worker ends, both
    /// best effort: the records held back since the last turn are written ([`Blackboard::append_event_soon`],
    /// [`Blackboard::apply_soon`]), then the worktrees and clean checkouts finished with are removed with one
    /// process ([`WorktreeSweep`]; what is left is a worktree of an ended brief, which `agency gc` collects
    /// once the run is finished). In that order: a worktree goes only once the record that its brief is done
    /// with it has been written.
    pub(crate) fn end_turn(&self) {
        let _ = self.store.flush_events();
        let _ = self.worktree_sweep.sweep();
    }

    /// Drives `run` until it succeeds, fails, halts or is cancelled: the run's one driver (tier handling,
    /// gates, merges), running agents itself and beside any [`Engine::work`]ers on the same blackboard.
    /// Safe to call on a run another driver was driving when it died: the claims that driver left behind
    /// are taken back first (what `agency run --resume` means), live workers keep theirs, and dead
    /// workers' claims are taken back when their lease ends. Only one driver may drive a run: while one
    /// does (holding the blackboard's driver lease, which ends with its process however it ends), a second
    /// is refused before it touches anything. Stopping on an error or when cancelled, it stops its agents
    /// and gives their briefs back first.
    pub async fn drive(&self, run: RunId, cancel: &CancelToken) -> Result<DriveOutcome> {
        let lease = self.store.lock_driver(run, &self.options.worker)?;
        let record = self.store.get_run(run)?;
        if !record.status.is_terminal() {
            self.finish_start(&record)?;
        }
        self.release_orphaned_claims(run).await?;
        let mut crew = crate::crew::Crew::new(self);
        let ended = match self.drive_loop(run, cancel, &mut crew, &lease).await {
            Ok(outcome) => Ok(outcome),
            Err(error) => Err(crew.release(self, run, error).await),
        };
        self.end_turn();
        ended
    }

    async fn drive_loop(
        &self,
        run: RunId,
        cancel: &CancelToken,
        crew: &mut crate::crew::Crew,
        lease: &agency_store::DriverLease,
    ) -> Result<DriveOutcome> {
        let mut passes = crate::advance::Passes::default();
        let mut outbox = crate::notify::Outbox::open(self, run);
        let mut board_reviews = crate::board_review::BoardReviews::default();
        let mut stall = crate::stall::StallWatch::default();
        let mut idle = crate::stall::IdleAgents::default();
        // Of a run's record only its status moves; the rest (goal, repository, configuration) is read again
        // only when the status has moved.
        let mut record = self.store.get_run(run)?;
        loop {
            if cancel.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            // A driver whose lease lapsed (its PostgreSQL session ended) takes it again or stops: it never
            // drives beside another.
            lease.revalidate()?;
            if self.store.run_status(run)? != record.status {
                record = self.store.get_run(run)?;
            }
            outbox.deliver(self, &record).await;
            if record.status.is_terminal() {
                crew.abort_all();
                return Ok(self.outcome(&record));
            }
            crew.reclaim_expired(self, run).await?;
            idle.look(self, run, self.options.agent_idle)?;
            let waiting = self.tend_gates(run)?;
            board_reviews.tend(self, run, cancel)?;
            let progressed = passes.run(self, run).await?;
            let mut spawned = false;
            let paused = self.paused(run)?;
            if !waiting && !paused {
                spawned = crew.fill(self, run, cancel)?;
            }
            self.end_turn();
            if !crew.is_empty() {
                stall.busy(self, run)?;
                crew.collect(self, self.options.poll).await?;
                continue;
            }
            if spawned || progressed || waiting || paused {
                stall.busy(self, run)?;
            } else {
                stall.quiet_turn(self, run, &mut passes)?;
            }
            if !(spawned || progressed) {
                self.nap(self.options.poll).await;
            }
        }
    }

    /// Waits `poll`, or less when [`EngineOptions::wake`] is notified (a human decision was written).
    pub(crate) async fn nap(&self, poll: Duration) {
        match &self.options.wake {
            Some(wake) => {
                let _ = tokio::time::timeout(poll, wake.notified()).await;
            }
            None => tokio::time::sleep(poll).await,
        }
    }

    fn outcome(&self, run: &Run) -> DriveOutcome {
        let branch = (run.status == RunStatus::Succeeded).then(|| self.branches(run.id).integration());
        DriveOutcome {
            status: run.status,
            branch,
        }
    }

    /// Takes back the claims of the driver this one replaces: briefs it left `running` go back to
    /// `pending` at once (a `RESUME` line each, naming it), so they are spawned again (their worktree and
    /// branch are reused). That driver is gone — a run has one driver — so nothing renews those claims;
    /// waiting for their lease would only stall the run. So are claims that name no holder, or this
    /// runner (an earlier life of it). Workers' claims are theirs: a live worker renews them and goes on
    /// (its agents are not stopped), a dead one's are taken back when their lease ends
    /// ([`crate::crew::Crew::reclaim_expired`], on this driver's first pass). An agent process the old
    /// driver left running is stopped first ([`Engine::stop_leftover`]), so the brief never has two.
    async fn release_orphaned_claims(&self, run: RunId) -> Result<()> {
        for brief in self.store.list_briefs_by_status(run, BriefStatus::Running)? {
            let holder = brief.claimed_by.as_deref();
            let orphaned = match holder {
                None => true,
                Some(name) => {
                    name == self.options.worker || crate::Role::of(name) == Some(crate::Role::Driver)
                }
            };
            if !orphaned {
                continue;
            }
            self.stop_leftover(&brief, holder).await?;
            let by = holder.map(|h| format!(" ({h})")).unwrap_or_default();
            let event = NewEvent::typed(
                run,
                EventPayload::Log(LogLine {
                    claimed_by: holder.map(str::to_string),
                    ..LogLine::new(
                        "normal",
                        Some("RESUME"),
                        format!("{} restarted after the runner{by} stopped", brief.title),
                    )
                }),
            );
            match self
                .store
                .update_brief_status(brief.id, BriefStatus::Running, BriefStatus::Pending, event)
            {
                // It finished, failed or was taken back meanwhile: nothing left to restart.
                Ok(_) | Err(agency_store::StoreError::Conflict { .. }) => {}
                Err(other) => return Err(other.into()),
            }
        }
        Ok(())
    }

    fn paused(&self, run: RunId) -> Result<bool> {
        Ok(self
            .store
            .pending_gates(Some(run))?
            .iter()
            .any(|g| g.kind == GateKind::Pause))
    }

    /// Times out or auto-approves pending gates; returns whether any gate still holds the run.
    fn tend_gates(&self, run: RunId) -> Result<bool> {
        let timeout = match self.options.gate_timeout {
            Some(given) => chrono::Duration::from_std(given).unwrap_or(chrono::Duration::MAX),
            None => chrono::Duration::minutes(i64::from(self.config.visibility.gate_timeout_minutes)),
        };
        let mut holding = false;
        for gate in self.store.pending_gates(Some(run))? {
            if gate.kind == GateKind::Pause {
                holding = true;
                continue;
            }
            // A budget is money, and an escalation gate is the end of the ladder (approving it grants a
            // fresh retry budget, so approving it automatically would loop for ever): neither is approved
            // automatically.
            if self.options.auto_approve && !matches!(gate.kind, GateKind::Budget | GateKind::Escalation) {
                let note = Some("auto-approved (--auto-approve)".to_string());
                self.store.decide_gate(
                    gate.id,
                    GateDecision::Approve {
                        by: "auto".into(),
                        note,
                    },
                )?;
            } else if matches!(gate.kind, GateKind::Budget | GateKind::Escalation) {
                // Money and the end of the escalation ladder are a human's to decide: these gates never
                // time out (rejecting them would end the run); past the timeout they are announced again,
                // once per timeout, until someone decides.
                self.remind(&gate, timeout)?;
                holding = true;
            } else if chrono::Utc::now() - gate.opened_at > timeout {
                let reason = format!("no decision within {}", human_duration(timeout));
                self.store.decide_gate(
                    gate.id,
                    GateDecision::Reject {
                        by: "timeout".into(),
                        reason,
                    },
                )?;
            } else {
                holding = true;
            }
        }
        Ok(holding)
    }

    /// Writes a `REMINDER` line for `gate` (which the notifiers announce like the gate itself) once it has
    /// waited another whole `every` since it opened. What was sent is remembered by this runner only: a
    /// resumed one sends the current period's reminder once more.
    fn remind(&self, gate: &agency_core::gate::Gate, every: chrono::Duration) -> Result<()> {
        let waited = chrono::Utc::now() - gate.opened_at;
        if every <= chrono::Duration::zero() || waited < every {
            return Ok(());
        }
        let due = waited.num_seconds() / every.num_seconds().max(1);
        let mut reminders = self
            .reminders
            .lock()
            .map_err(|_| EngineError::State("reminders poisoned".into()))?;
        let sent = reminders.entry(gate.id).or_insert(0);
        if *sent >= due {
            return Ok(());
        }
        *sent = due;
        let message = format!(
            "the {} gate has waited {} for a decision: `agency approve {run}` or `agency reject {run} --reason \"…\"`",
            gate.kind,
            human_duration(waited),
            run = gate.run.short()
        );
        let event = NewEvent::typed(
            gate.run,
            EventPayload::Log(LogLine {
                gate: Some(gate.id),
                reminder: Some(due),
                ..LogLine::new("normal", Some("REMINDER"), message)
            }),
        );
        self.store.append_event(event)?;
        Ok(())
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

    /// The ledger an agent's reported usage is charged to: the run's, for a runtime whose model calls agency
    /// does not meter itself (see [`Runtime::usage_unmetered`]); none for the built-in agent, whose calls
    /// the metered providers already charged, or when the run has no ledger.
    pub(crate) fn unmetered_ledger(
        &self,
        runtime: Option<&Arc<dyn Runtime>>,
    ) -> Option<crate::budget::SharedLedger> {
        runtime
            .is_some_and(|r| r.usage_unmetered())
            .then(|| self.ledger.clone())
            .flatten()
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
        let hooks = RunnerHooks::new(
            self.store.clone(),
            brief.clone(),
            self.reviewer(&brief),
            cancel.child(),
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
        let cancel = cancel.child();
        let id = brief.id;
        let claim =
            crate::crew::hold_claim(self.store.clone(), id, self.options.worker.clone(), self.lease());
        let record = vec![workspace, Change::AppendEvent(spawned)];
        launches.add(record, async move {
            tokio::select! {
                outcome = runtime.run(&task, &hooks, &cancel) => (id, AgentEnd::Finished(Box::new(outcome))),
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
            .find(|b| b.tier == brief.tier && b.title == brief.title && b.attempt == previous_attempt)
        else {
            return Ok(None);
        };
        let Some(branch) = previous.branch.clone() else {
            return Ok(None);
        };
        let Some(report) = self.artifact_of(brief.run, previous.id, report_name)? else {
            return Ok(None);
        };
        let partial = serde_json::from_slice::<serde_json::Value>(&report.bytes)
            .ok()
            .and_then(|r| r.get("status").and_then(|s| s.as_str()).map(|s| s == "partial"))
            .unwrap_or(false);
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
            .map(|a| crate::previous::remembered(self, brief, &String::from_utf8_lossy(&a.bytes)))
            .transpose()
    }

    /// Moves `brief` from the status it has to `to` (compare-and-set) with a `brief_status` event whose
    /// payload is `from`, `to` and the fields of `detail` (a reason or a note).
    pub(crate) fn move_brief(
        &self,
        brief: &Brief,
        to: BriefStatus,
        detail: BriefStatusChange,
    ) -> Result<Brief> {
        let event = status_event(brief, to, detail);
        let moved = self
            .store
            .update_brief_status(brief.id, brief.status, to, event)?;
        if to.is_terminal() {
            self.forget(brief.id);
        }
        Ok(moved)
    }

    /// Adds to `batch` what [`Engine::move_brief`] writes; [`Engine::apply`] it.
    pub(crate) fn stage_move(
        batch: &mut WriteBatch,
        brief: &Brief,
        to: BriefStatus,
        detail: BriefStatusChange,
    ) {
        batch.move_brief(brief.id, brief.status, to, status_event(brief, to, detail));
    }

    /// Writes `batch` in one transaction (all or nothing), then does what [`Engine::move_brief`] does
    /// after each of its status moves.
    pub(crate) fn apply(&self, batch: WriteBatch) -> Result<()> {
        self.record(batch, |store, batch| store.apply(batch))
    }

    /// [`Engine::apply`] held back to be written with the next write ([`Blackboard::apply_soon`]), for a
    /// step whose caller writes what was held before anything reads it.
    pub(crate) fn apply_soon(&self, batch: WriteBatch) -> Result<()> {
        self.record(batch, |store, batch| store.apply_soon(batch))
    }

    /// Hands `batch` to `write`, then forgets the briefs it ended.
    fn record(
        &self,
        batch: WriteBatch,
        write: impl FnOnce(&dyn Blackboard, WriteBatch) -> agency_store::Result<()>,
    ) -> Result<()> {
        let ended: Vec<BriefId> = batch
            .changes()
            .iter()
            .filter_map(|change| match change {
                Change::MoveBrief { id, to, .. } if to.is_terminal() => Some(*id),
                _ => None,
            })
            .collect();
        write(self.store.as_ref(), batch)?;
        for id in ended {
            self.forget(id);
        }
        Ok(())
    }

    /// A brief that has ended is forgotten by the live budget ledger: its spending stays in its
    /// workstream's and the run's, and the ledger stops growing with the run.
    fn forget(&self, brief: BriefId) {
        if let Some(ledger) = &self.ledger {
            ledger
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .forget_brief(&brief.to_string());
        }
    }

    /// Stores text for a brief as a named artifact.
    pub(crate) fn put_text(&self, brief: &Brief, name: &str, content_type: &str, text: &str) -> Result<()> {
        self.store
            .put_artifact(text_artifact(brief, name, content_type, text))?;
        Ok(())
    }

    /// Records an agent's outcome: a valid report moves the brief to `verifying` for [`crate::advance`];
    /// anything else is a failure for the escalation ladder. The move to `verifying` is held back
    /// ([`Blackboard::apply_soon`]) for the caller to write with those of the other agents that finished
    /// together ([`crate::crew::Crew::collect`]).
    pub(crate) async fn finish_agent(&self, id: BriefId, end: AgentEnd) -> Result<()> {
        let AgentEnd::Finished(outcome) = end else {
            return Ok(());
        };
        let outcome = *outcome;
        let brief = self.store.get_brief(id)?;
        // Cancelled meanwhile, or reclaimed by another runner after this one's lease ran out: the brief is
        // no longer this agent's to report on.
        if brief.status != BriefStatus::Running
            || brief.claimed_by.as_deref() != Some(self.options.worker.as_str())
        {
            return Ok(());
        }
        let role = BriefRole::of(&brief);
        if !role.writes() {
            // A reader's checkout has served its purpose; implementers keep theirs until committed. One
            // refused by the budget starts again, maybe on another runner, in a checkout made afresh: its
            // old one goes now, not at a sweep that could come after the new one was made at that path.
            let branches = self.branches(brief.run);
            if matches!(
                &outcome,
                Err(RuntimeError::Model(agency_llm::LlmError::Budget(_)))
            ) {
                let _ = branches.remove_worktree_now(&brief);
            } else {
                branches.remove_worktree(&brief);
            }
        }
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(RuntimeError::Model(agency_llm::LlmError::Budget(exceeded))) => {
                // Not the agent's failure: the call was refused before it was made. The brief waits at the
                // budget gate (already open) and starts again once a human raises the limit.
                self.move_brief(
                    &brief,
                    BriefStatus::Pending,
                    BriefStatusChange::because(format!("budget: {exceeded}")),
                )?;
                return Ok(());
            }
            Err(RuntimeError::Model(err)) if crate::outage::is_outage(&err) => {
                return crate::outage::pause_for(self, &brief, &err);
            }
            Err(err) => {
                return crate::advance::fail_brief(self, &brief, &format!("the agent could not run: {err}"));
            }
        };
        if let AgentStop::Signal(signal) = &outcome.stop {
            return crate::advance::signal(self, &brief, signal);
        }
        let Some(report) = outcome.report else {
            let why = match &outcome.stop {
                AgentStop::TurnLimit => "used all its turns without reporting",
                AgentStop::Timeout => "ran past its time limit",
                AgentStop::Cancelled => "was cancelled",
                AgentStop::Mistake(why) => why,
                _ => "stopped without reporting its result",
            };
            return crate::advance::fail_brief(self, &brief, &format!("the agent {why}"));
        };
        let mut report = report;
        stamp_runner_facts(&brief, &mut report.output);
        if let Err(problems) = crate::advance::check_output(role, &report.output) {
            return crate::advance::fail_brief(
                self,
                &brief,
                &format!(
                    "its output does not match the {} schema:\n{problems}",
                    role.as_str()
                ),
            );
        }
        // The output, the report and (when done) the move to `verifying` are one write: a crash leaves all
        // of them or none, and the brief, still `running`, is started again on resume. A move that no longer
        // applies when it is written (the brief was cancelled or taken back meanwhile) is dropped whole.
        let mut batch = WriteBatch::new();
        batch
            .put_artifact(text_artifact(
                &brief,
                &output_name(brief.id),
                "application/json",
                &report.output.to_string(),
            ))
            .put_artifact(text_artifact(
                &brief,
                &report_name(brief.id),
                "application/json",
                &serde_json::to_string(&report).unwrap_or_default(),
            ));
        let resolved = brief.attempt > 0 && report.status == agency_exec::runtime::ReportStatus::Done;
        let payload = EventPayload::Completed(payload::Completed {
            title: brief.title.clone(),
            status: match report.status {
                agency_exec::runtime::ReportStatus::Done => "done",
                agency_exec::runtime::ReportStatus::Partial => "partial",
                agency_exec::runtime::ReportStatus::Blocked => "blocked",
            }
            .to_string(),
            summary: report.summary.clone(),
            attempt: brief.attempt,
            note: resolved.then(|| "retry resolved".to_string()),
        });
        match report.status {
            agency_exec::runtime::ReportStatus::Done => {
                let event = NewEvent::typed(brief.run, payload).brief(id).tier(brief.tier);
                batch.move_brief(id, BriefStatus::Running, BriefStatus::Verifying, event);
                self.apply_soon(batch)
            }
            agency_exec::runtime::ReportStatus::Partial => {
                self.apply(batch)?;
                // The seed's "salvage the good parts, re-task the remainder": what the implementer did is
                // committed on its branch, and its next attempt starts from there ([`Engine::salvaged_base`]).
                let kept = role == BriefRole::Implementer
                    && self.branches(brief.run).commit_brief(&brief).is_ok()
                    && brief.branch.is_some();
                let why = if kept {
                    format!(
                        "partial: {}\nWhat it did is kept: the next attempt starts from its work and does what \
                         remains.",
                        report.summary
                    )
                } else {
                    format!("partial: {}", report.summary)
                };
                crate::advance::fail_brief(self, &brief, &why)
            }
            agency_exec::runtime::ReportStatus::Blocked => {
                self.apply(batch)?;
                crate::advance::blocked(self, &brief, &report.summary)
            }
        }
    }
}

/// `45 s`, `12 min`, `3 h 5 min`.
fn human_duration(span: chrono::Duration) -> String {
    let seconds = span.num_seconds().max(0);
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min", seconds / 60),
        _ => format!("{} h {} min", seconds / 3600, seconds % 3600 / 60),
    }
}

/// The `brief_status` event of moving `brief` from its status to `to`: `from`, `to` and the fields of
/// `detail` (a reason or a note).
fn status_event(brief: &Brief, to: BriefStatus, detail: BriefStatusChange) -> NewEvent {
    NewEvent::brief_moved(brief, to, detail)
}

/// Text for a brief as a named artifact, to store.
pub(crate) fn text_artifact(brief: &Brief, name: &str, content_type: &str, text: &str) -> NewArtifact {
    NewArtifact::new(brief.run, name, content_type, text.as_bytes().to_vec()).brief(brief.id)
}

/// What commands an agent runs may see of the runner's environment: enough to find programs and write
/// temporary files, never the keys and tokens the runner itself holds.
fn agent_env() -> Vec<(String, String)> {
    ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok().map(|value| (name.to_string(), value)))
        .collect()
}

/// The artifact name of a brief's structured output.
pub fn output_name(brief: BriefId) -> String {
    brief_artifact_name("output", brief)
}

/// The artifact name of a brief's full report.
pub fn report_name(brief: BriefId) -> String {
    brief_artifact_name("report", brief)
}

/// The artifact name of the feedback a retried brief starts from.
pub fn feedback_name(brief: BriefId) -> String {
    brief_artifact_name("feedback", brief)
}

/// The artifact name of the diff an implementer's commit was handed to its verifier (and its pipeline
/// successors) with.
pub fn diff_name(brief: BriefId) -> String {
    brief_artifact_name("diff", brief)
}

/// `kind/<the brief's whole id>`. Names carried the id's first 8 hex digits until 2026-11-25, and two
/// briefs of a large run share those (about one pair in a run of 100,000 briefs): a 100,000-brief run
/// signed a slice off against another brief's report.
pub(crate) fn brief_artifact_name(kind: &str, brief: BriefId) -> String {
    format!("{kind}/{}", brief.whole())
}

impl Engine {
    /// The newest artifact `name_of(brief)` of `brief` (see [`brief_artifact`]).
    pub(crate) fn artifact_of(
        &self,
        run: RunId,
        brief: BriefId,
        name_of: fn(BriefId) -> String,
    ) -> Result<Option<agency_store::Artifact>> {
        brief_artifact(self.store.as_ref(), run, brief, name_of)
    }
}

/// The newest artifact `name_of(brief)` of `brief`. A run recorded by an earlier build named it by the id's
/// first 8 hex digits, which two of its briefs can share: such an artifact is taken only when it is this
/// brief's own.
fn brief_artifact(
    store: &dyn Blackboard,
    run: RunId,
    brief: BriefId,
    name_of: fn(BriefId) -> String,
) -> Result<Option<agency_store::Artifact>> {
    let name = name_of(brief);
    if let Some(found) = store.latest_artifact(run, &name)? {
        return Ok(Some(found));
    }
    let Some((kind, _)) = name.split_once('/') else {
        return Ok(None);
    };
    Ok(store
        .latest_artifact(run, &format!("{kind}/{}", brief.legacy_short()))?
        .filter(|found| found.meta.brief == Some(brief)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn briefs_whose_ids_begin_alike_name_their_artifacts_apart() {
        // The two ids of a collision a 100,000-brief run met.
        let a = BriefId("ee75b930-8024-4b26-a05c-df8d652cfec7".parse().unwrap());
        let b = BriefId("ee75b930-8028-4cb2-ad2b-e07081e20bef".parse().unwrap());
        assert_eq!(a.legacy_short(), b.legacy_short());
        for name_of in [output_name, report_name, feedback_name, diff_name] {
            assert_ne!(name_of(a), name_of(b));
        }
        assert_eq!(report_name(a), "report/ee75b93080244b26a05cdf8d652cfec7");
    }

    #[test]
    fn a_short_named_artifact_of_an_earlier_build_is_read_only_by_its_own_brief() {
        use agency_store::conformance::sample_brief;
        use agency_store::{NewArtifact, NewRun, SqliteBlackboard};

        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let brief = |id: &str| Brief {
            id: BriefId(id.parse().unwrap()),
            ..sample_brief(run, id)
        };
        let (a, b, c) = (
            brief("ee75b930-8024-4b26-a05c-df8d652cfec7"),
            brief("ee75b930-8028-4cb2-ad2b-e07081e20bef"),
            brief("0123abcd-0000-4000-8000-000000000000"),
        );
        for each in [&a, &b, &c] {
            store.insert_brief(each).unwrap();
        }
        let legacy = |of: &Brief, text: &str| {
            NewArtifact::new(
                run,
                format!("report/{}", of.id.legacy_short()),
                "text/plain",
                text,
            )
            .brief(of.id)
        };
        store.put_artifact(legacy(&a, "a's, short-named")).unwrap();
        store
            .put_artifact(legacy(&b, "b's, short-named and newer"))
            .unwrap();
        store.put_artifact(legacy(&c, "c's, short-named")).unwrap();
        let read = |of: &Brief| {
            brief_artifact(&store, run, of.id, report_name)
                .unwrap()
                .map(|found| String::from_utf8(found.bytes).unwrap())
        };
        assert_eq!(read(&b).as_deref(), Some("b's, short-named and newer"));
        assert_eq!(read(&c).as_deref(), Some("c's, short-named"));
        assert_eq!(read(&a), None, "never another brief's artifact");
        store
            .put_artifact(NewArtifact::new(run, report_name(a.id), "text/plain", "a's").brief(a.id))
            .unwrap();
        assert_eq!(read(&a).as_deref(), Some("a's"));
    }
}
