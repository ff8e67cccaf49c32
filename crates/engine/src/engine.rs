//! The runner's shared state, [`Engine`], and what every part of it does through it: write a log line or a
//! status move, store an artifact, read a brief's artifact back, keep a timer for the next pass, and tend
//! the gates on each turn. The rest of the runner is in its own modules, each an `impl Engine` or plain
//! functions over it: the loop ([`crate::drive`]), starting an agent ([`crate::spawn`]) and recording how
//! it ended ([`crate::finish`]), and the passes that turn finished briefs into what comes next
//! ([`crate::advance`], deciding through `agency_flow`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_core::config::TeamConfig;
use agency_core::event::payload::{BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateKind;
use agency_core::{Brief, BriefId, BriefStatus, RunId, Tier};
use agency_exec::runtime::personality::Personalities;
use agency_exec::runtime::{AgentLimits, Runtime};
use agency_exec::{Repo, WorktreeSweep};
use agency_llm::{BudgetLedger, Provider};
use agency_store::{Blackboard, Change, RunStatus, WriteBatch};

pub use crate::artifacts::{diff_name, feedback_name, output_name, report_name};
use crate::branches::RunBranches;
use crate::error::{EngineError, Result};

/// The run's budget ledger shared between the metered providers and the runner (`budget::SharedLedger`).
type Ledger = Arc<Mutex<BudgetLedger>>;

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
    /// The git remote the run's branches are shared through, when its runners do not share a disk
    /// ([`crate::remote`]); `None` on one machine.
    pub remote: Option<crate::branches::SharedRemote>,
    /// What this runner offers: the tiers and labels of the briefs it claims ([`crate::placement`]). The
    /// default, every tier and no label, is the driver's own runner: it never takes a brief whose
    /// workstream needs a label.
    pub offer: agency_core::placement::Offer,
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
            remote: None,
            offer: agency_core::placement::Offer::default(),
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
    pub(crate) ledger: Option<Ledger>,
    /// The run's approved plan, parsed once (see [`crate::plan::approved`]).
    pub(crate) plan_cache: Arc<Mutex<Option<Arc<agency_flow::ApprovedPlan>>>>,
    /// The earliest time a pass must run even if nothing changed on the blackboard (a T3 mesh timeout).
    pub(crate) wake: Arc<Mutex<Option<chrono::DateTime<chrono::Utc>>>>,
    /// The reminders sent for each gate that waits for a human past the gate timeout.
    pub(crate) reminders: Arc<Mutex<std::collections::HashMap<agency_core::GateId, i64>>>,
    /// The run's shared branches known to exist.
    pub(crate) known_branches: crate::branches::KnownBranches,
    /// Each implementer's diff, kept for its slice's sign-off.
    pub(crate) slice_diffs: crate::slice_diffs::SliceDiffs,
    /// The worktrees and clean checkouts this runner is done with, removed together once per pass.
    pub(crate) worktree_sweep: WorktreeSweep,
    /// The talent pool: whose voice each agent speaks in, after agency's own rules.
    pub(crate) personalities: Arc<Personalities>,
    /// The probes of outage gates an `--auto-approve` run sends ([`crate::outage::auto_resume`]).
    pub(crate) outage_probes: crate::probes::Probes,
    /// The auditor's own runtime and model (`signoff.auditor_model`); `None`: it runs as the judge does.
    pub(crate) auditor: Option<AuditorRuntime>,
    /// Significant agreement mismatches waiting to be put to the tier that handed the work over.
    pub(crate) agreement_asks: crate::agreement_asks::Asks,
    /// Worktrees made ahead while a gate waits ([`crate::spares`]).
    pub(crate) spares: Arc<crate::spare_pool::Spares>,
    /// Each run's path amendments as far as read ([`crate::amendment_log::AmendmentLog`]).
    pub(crate) amendment_log: Arc<crate::amendment_log::AmendmentLog>,
    /// Each run's stage-1 verify records as far as read ([`crate::verify_log::VerifyLog`]).
    pub(crate) verify_log: Arc<crate::verify_log::VerifyLog>,
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
            outage_probes: crate::probes::Probes::default(),
            auditor: None,
            agreement_asks: crate::agreement_asks::Asks::default(),
            spares: Arc::default(),
            amendment_log: Arc::default(),
            verify_log: Arc::default(),
        })
    }

    /// Gives the agents the personalities of `pool` (team.yaml's `personalities`, loaded and checked by the
    /// caller) instead of agency's own five.
    pub fn with_personalities(mut self, pool: Personalities) -> Self {
        self.personalities = Arc::new(pool);
        self
    }

    /// Runs the auditors of this run's slices on `runtime` (the built-in agent on `signoff.auditor_model`'s
    /// `provider`) instead of the judge's. The provider is also what an outage probe asks.
    pub fn with_auditor(mut self, runtime: Arc<dyn Runtime>, provider: Arc<dyn Provider>) -> Self {
        self.auditor = Some(AuditorRuntime { runtime, provider });
        self
    }

    /// Shares the run's budget ledger (the one the metered providers charge), so that an approved
    /// `budget` gate can raise its limits.
    pub fn with_ledger(mut self, ledger: Ledger) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// The blackboard.
    pub fn store(&self) -> &Arc<dyn Blackboard> {
        &self.store
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
        .shared_through(self.options.remote.clone())
    }

    /// What publishing `run` (push and pull request) needs of this runner.
    pub(crate) fn publisher(&self, run: RunId) -> crate::forge::Publisher {
        crate::forge::Publisher {
            store: self.store.clone(),
            repo: self.repo.clone(),
            forge: self.config.forge.clone(),
            integration: self.branches(run).integration(),
        }
    }

    /// The repository this runner works in.
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// This runner, sharing the run's branches through `remote` ([`crate::remote`]).
    pub fn sharing_through(mut self, remote: crate::branches::SharedRemote) -> Self {
        Arc::make_mut(&mut self.options).remote = Some(remote);
        self
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

    /// Waits `poll`, or less when [`EngineOptions::wake`] is notified (a human decision was written).
    pub(crate) async fn nap(&self, poll: Duration) {
        match &self.options.wake {
            Some(wake) => {
                let _ = tokio::time::timeout(poll, wake.notified()).await;
            }
            None => tokio::time::sleep(poll).await,
        }
    }

    pub(crate) fn paused(&self, run: RunId) -> Result<bool> {
        Ok(self
            .store
            .pending_gates(Some(run))?
            .iter()
            .any(|g| g.kind == GateKind::Pause))
    }

    /// The ledger an agent's reported usage is charged to: the run's, for a runtime whose model calls agency
    /// does not meter itself (see [`Runtime::usage_unmetered`]); none for the built-in agent, whose calls
    /// the metered providers already charged, or when the run has no ledger.
    pub(crate) fn unmetered_ledger(&self, runtime: Option<&Arc<dyn Runtime>>) -> Option<Ledger> {
        runtime
            .is_some_and(|r| r.usage_unmetered())
            .then(|| self.ledger.clone())
            .flatten()
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
            .put_artifact(crate::artifacts::text_artifact(brief, name, content_type, text))?;
        Ok(())
    }
}

/// The auditor's own runtime, when `signoff.auditor_model` gives it another model than the judge's.
#[derive(Debug, Clone)]
pub(crate) struct AuditorRuntime {
    pub runtime: Arc<dyn Runtime>,
    pub provider: Arc<dyn agency_llm::Provider>,
}

/// The `brief_status` event of moving `brief` from its status to `to`: `from`, `to` and the fields of
/// `detail` (a reason or a note).
fn status_event(brief: &Brief, to: BriefStatus, detail: BriefStatusChange) -> NewEvent {
    NewEvent::brief_moved(brief, to, detail)
}

impl Engine {
    /// The newest artifact `name_of(brief)` of `brief` (see [`crate::artifacts::brief_artifact`]).
    pub(crate) fn artifact_of(
        &self,
        run: RunId,
        brief: BriefId,
        name_of: fn(BriefId) -> String,
    ) -> Result<Option<agency_store::Artifact>> {
        crate::artifacts::brief_artifact(self.store.as_ref(), run, brief, name_of)
    }
}
