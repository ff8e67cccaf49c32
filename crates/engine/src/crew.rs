//! The runner's agents and its claims on their briefs. A runner claims pending briefs up to its concurrency
//! and runs one agent per claim; while an agent works, its claim is renewed every third of the lease
//! (team.yaml `runner.claim_lease_seconds`), and a claim the runner lost (taken back after its lease ran
//! out, or its brief cancelled by an escalation) stops that agent and drops its outcome. Every runner on a
//! blackboard also takes back claims whose lease ended — their runner died — so with several runners on one
//! PostgreSQL blackboard a dead worker's brief is picked up again, by exactly one of the others.
//!
//! A runner that stops on an error, or is cancelled, first stops its agents and then gives their briefs
//! back ([`Crew::release`]): they are claimable again at once, not one lease later, and the log says why
//! (`RELEASED`). Only a runner that dies without a word (kill -9, a lost machine) leaves its claims to
//! their lease.
//!
//! [`Engine::drive`] (the run's driver: tier handling, gates, merges) and [`Engine::work`] (a worker that
//! only runs agents for a run someone else drives) share this.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use agency_core::event::payload::{BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::{BriefId, BriefStatus, RunId};
use agency_exec::runtime::{AgentOutcome, RuntimeError};
use agency_llm::CancelToken;
use agency_store::{Blackboard, Change, Claim, Claimed, FencedBlackboard, RunStatus, StoreError, WriteBatch};
use std::sync::Arc;
use tokio::task::JoinSet;

use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// How an agent's task ended.
pub(crate) enum AgentEnd {
    /// The agent stopped (or could not run); its outcome is recorded.
    Finished(Box<std::result::Result<AgentOutcome, RuntimeError>>),
    /// This runner no longer holds the brief's claim: the agent was stopped and nothing is recorded.
    ClaimLost,
    /// The agent was stopped because its teachback's reviewer is in an outage ([`crate::outage`]).
    ReviewerOutage(Box<crate::reviewer_outage::ReviewerOutage>),
}

/// An agent's whole run, from start to its [`AgentEnd`].
type AgentRun = Pin<Box<dyn Future<Output = (BriefId, AgentEnd)> + Send>>;

/// Agents ready to start and what records their start (their worktrees, `spawned`): [`Crew::fill`] records
/// all of them in one batch before it starts any, so an agent's first event always follows its `spawned`.
/// The batch rides with the handle's next write ([`Blackboard::apply_soon`]: the next claim, an agent's
/// record, the end of the turn): nothing reads it before then. Should the runner die first, its briefs are
/// still claimed and start again in the worktrees that are there: the record of a worktree is for people
/// reading the blackboard, while resume finds a brief's worktree at its path and `agency gc` through git.
#[derive(Default)]
pub(crate) struct Launches {
    record: WriteBatch,
    runs: Vec<AgentRun>,
}

impl Launches {
    /// Adds an agent: `record` is written before it starts, `run` is its whole run (not polled until then).
    pub(crate) fn add(
        &mut self,
        record: Vec<Change>,
        run: impl Future<Output = (BriefId, AgentEnd)> + Send + 'static,
    ) {
        for change in record {
            self.record.push(change);
        }
        self.runs.push(Box::pin(run));
    }
}

/// The agents one runner has in flight.
pub(crate) struct Crew {
    agents: JoinSet<(BriefId, AgentEnd)>,
    /// The claim each agent in flight works under: its writes, and its outcome's, are fenced by it.
    claims: HashMap<BriefId, Claim>,
    concurrency: usize,
    reclaim_due: Instant,
    holders_due: Instant,
    /// The driver's watch for briefs no live runner can take (unused by a worker).
    unplaced: crate::placement::UnplacedBriefs,
}

impl Crew {
    /// A crew of at most `concurrency` agents (team.yaml `runner.concurrency`; at least one).
    pub(crate) fn new(concurrency: u32) -> Self {
        Crew {
            agents: JoinSet::new(),
            claims: HashMap::new(),
            concurrency: agency_flow::start::concurrency(concurrency),
            reclaim_due: Instant::now(),
            holders_due: Instant::now(),
            unplaced: crate::placement::UnplacedBriefs::default(),
        }
    }

    /// How many more agents this runner may start now.
    pub(crate) fn room(&self) -> usize {
        agency_flow::start::room(self.concurrency, self.agents.len())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Stops every agent (the run ended: nothing is left for them to do).
    pub(crate) fn abort_all(&mut self) {
        self.agents.abort_all();
        self.claims.clear();
    }

    /// Ends this runner's part in `run` after its loop stopped with `error`: stops every agent and waits
    /// until they have stopped (so none records an outcome afterwards), then moves each brief it still
    /// holds back to `pending` with a `RELEASED` log line saying why, so another runner (or this one,
    /// resumed) takes it at once. A brief whose claim this runner has meanwhile lost is left to its new
    /// holder. If the blackboard cannot be written, the claims return when their lease ends; the error
    /// then says so too.
    /// `store` and `worker` are the runner's blackboard and name.
    pub(crate) async fn release(
        &mut self,
        store: &dyn Blackboard,
        worker: &str,
        run: RunId,
        error: EngineError,
    ) -> EngineError {
        self.agents.shutdown().await;
        self.claims.clear();
        match release_claims(store, worker, run, &error) {
            Ok(()) => error,
            Err(failed) => EngineError::Unreleased {
                error: Box::new(error),
                release: Box::new(failed),
            },
        }
    }

    /// Claims pending briefs of `run` and starts their agents, up to the concurrency limit. Returns
    /// whether any started. The free places are claimed in one write, and the agents' starts recorded with
    /// the next ([`Launches`]); if the budget holds one back, the briefs claimed after it are given back at
    /// once, unstarted.
    pub(crate) fn fill(&mut self, engine: &Engine, run: RunId, cancel: &CancelToken) -> Result<bool> {
        let room = self.room();
        let claimed = engine.store.claim_offered(
            Some(run),
            &engine.options.worker,
            engine.lease(),
            room,
            engine.offer(),
        )?;
        let mut launches = Launches::default();
        let mut claimed = claimed.into_iter();
        for Claimed { brief, claim } in claimed.by_ref() {
            // The agent writes through its claim's fence: woken after the claim was taken back, it writes
            // nothing more for the brief.
            if !engine.holding(&claim).spawn_agent(&mut launches, brief, cancel)? {
                // Held back by the budget: its gate is open now, and nothing else starts either.
                break;
            }
            self.claims.insert(claim.brief, claim);
        }
        engine.apply_soon(launches.record)?;
        let spawned = !launches.runs.is_empty();
        for run in launches.runs {
            self.agents.spawn(run);
        }
        let mut unstarted = WriteBatch::new();
        for Claimed { brief, .. } in claimed {
            Engine::stage_move(
                &mut unstarted,
                &brief,
                BriefStatus::Pending,
                BriefStatusChange::because(
                    "budget: another brief is waiting at the budget gate; not started",
                ),
            );
        }
        engine.apply(unstarted)?;
        Ok(spawned)
    }

    /// Waits up to `poll` for an agent to finish, then records it and every other agent that has
    /// finished meanwhile: one pass over the run per batch of finished agents, not one per agent, and
    /// their reports in one commit, written before that pass reads them.
    pub(crate) async fn collect(&mut self, engine: &Engine, poll: Duration) -> Result<()> {
        tokio::select! {
            joined = self.agents.join_next() => {
                if let Some(joined) = joined {
                    let (brief, end) = joined.map_err(|e| EngineError::State(format!("agent task: {e}")))?;
                    self.finish(engine, brief, end).await?;
                    while let Some(joined) = self.agents.try_join_next() {
                        let (brief, end) = joined.map_err(|e| EngineError::State(format!("agent task: {e}")))?;
                        self.finish(engine, brief, end).await?;
                    }
                    engine.store.flush_events()?;
                }
            }
            () = engine.nap(poll) => {}
        }
        Ok(())
    }

    /// Records an agent's end under its claim's fence. A claim lost meanwhile (this runner was stopped past
    /// its lease, and another runner — or this one anew — took the brief) writes nothing for the brief:
    /// the refusal is logged (`CLAIM LOST`) and the runner goes on.
    async fn finish(&mut self, engine: &Engine, brief: BriefId, end: AgentEnd) -> Result<()> {
        let Some(claim) = self.claims.remove(&brief) else {
            return engine.finish_agent(brief, end).await;
        };
        if matches!(end, AgentEnd::ClaimLost) {
            return Ok(());
        }
        // Asked first, so the log says so; the fence refuses the writes anyway should the claim go between.
        let lost = match engine.store.claim_of(brief)? {
            Some(now) if now == claim => None,
            now => Some(agency_store::StoreError::ClaimLost {
                brief: brief.short(),
                holder: claim.holder.clone(),
                generation: claim.generation,
                found: match now {
                    Some(other) => format!("claimed by {} in generation {}", other.holder, other.generation),
                    None => "unclaimed".to_string(),
                },
            }),
        };
        let lost = match lost {
            Some(lost) => lost,
            None => match engine.holding(&claim).finish_agent(brief, end).await {
                Err(EngineError::Store(lost @ StoreError::ClaimLost { .. })) => lost,
                other => return other,
            },
        };
        let record = engine.store.get_brief(brief)?;
        let line = LogLine::new(
            "normal",
            Some("CLAIM LOST"),
            format!("{}: the agent's outcome is dropped: {lost}", record.title),
        );
        let event = NewEvent::typed(record.run, EventPayload::Log(line))
            .brief(record.id)
            .tier(record.tier);
        engine.store.append_event(event)?;
        Ok(())
    }

    /// Renews the claims of this runner's agents in flight on `store`, each through its fence: an agent this
    /// process knows to be alive keeps its brief, however long the process was stopped or the wall clock
    /// jumped (a renewal refused because the claim is gone is left to that agent, which stops on it).
    fn renew_own(&self, store: &Arc<dyn Blackboard>, lease: chrono::Duration) -> Result<()> {
        for claim in self.claims.values() {
            let fenced = FencedBlackboard::new(store.clone(), claim.clone());
            match fenced.renew_claim(claim.brief, &claim.holder, lease) {
                Ok(_) | Err(StoreError::ClaimLost { .. } | StoreError::Conflict { .. }) => {}
                Err(other) => return Err(other.into()),
            }
        }
        Ok(())
    }

    /// Takes back the run's claims whose lease ended (their runner died), at most every quarter lease, and
    /// stops any agent process such a runner left running ([`Engine::stop_leftover`]) before this runner
    /// goes on to claim again.
    pub(crate) async fn reclaim_expired(&mut self, engine: &Engine, run: RunId) -> Result<()> {
        // Stale git locks this process removed (see agency_exec::git::locks) are said in the run's log.
        for notice in agency_exec::git::locks::take_notices() {
            engine.log(run, None, "GIT LOCK", notice)?;
        }
        if Instant::now() >= self.holders_due {
            self.holders_due = Instant::now() + HOLDERS_EVERY;
            self.reclaim_from_gone_holders(engine, run).await?;
        }
        if crate::Role::of(&engine.options.worker) == Some(crate::Role::Driver) {
            self.unplaced.look(
                engine.store.as_ref(),
                engine.config.runner.unplaced_alert_seconds,
                engine.lease(),
                run,
            )?;
        }
        if Instant::now() < self.reclaim_due {
            return Ok(());
        }
        self.reclaim_due = Instant::now() + engine.lease_std() / 4;
        // What this runner offers, said again every quarter lease: the driver counts a runner live for a
        // lease after it last said so (an ALERT for a brief nobody can take names the live offers).
        engine
            .store
            .record_offer(run, &engine.options.worker, engine.offer())?;
        // This runner's own live claims are renewed first: their lease is this process's to judge, and it
        // knows its agents run. Everyone else's are judged against this process's monotonic clock.
        self.renew_own(&engine.store, engine.lease())?;
        for brief in engine
            .store
            .reclaim_expired(Some(run), crate::gate_clock::liveness_now())?
        {
            engine.log(
                run,
                Some(brief.tier),
                "RECLAIMED",
                format!(
                    "{}: its runner stopped renewing its claim; it starts again",
                    brief.title
                ),
            )?;
            engine.stop_leftover(&brief, None).await?;
        }
        Ok(())
    }
}

/// How often a runner looks for claims held by a process of this host that is gone: a killed worker's
/// briefs go back to the run within this, not when their lease ends.
const HOLDERS_EVERY: Duration = Duration::from_secs(2);

impl Crew {
    /// Takes back at once the claims of runners on this host whose process is gone (a killed `agency
    /// worker`): the holder's name says its host and pid (`worker-HOST-PID`, see [`crate::Role`]), and
    /// that pid no longer runs here. A pid reused by another process since only delays this to the lease's
    /// end. This assumes runners naming one host share one pid namespace (not two containers with one
    /// hostname).
    async fn reclaim_from_gone_holders(&mut self, engine: &Engine, run: RunId) -> Result<()> {
        for brief in engine.store.list_briefs_by_status(run, BriefStatus::Running)? {
            let Some(holder) = brief.claimed_by.as_deref() else {
                continue;
            };
            if holder == engine.options.worker || !crate::Role::is_gone_here(holder) {
                continue;
            }
            let payload = claim_returned(
                "RECLAIMED",
                holder,
                "holder_gone",
                format!(
                    "{}: its runner {holder} is no longer running on this host; it starts again",
                    brief.title
                ),
            );
            let event = NewEvent::typed(run, payload).brief(brief.id).tier(brief.tier);
            match engine.store.update_brief_status(
                brief.id,
                BriefStatus::Running,
                BriefStatus::Pending,
                event,
            ) {
                Ok(_) => engine.stop_leftover(&brief, Some(holder)).await?,
                // Finished, failed or taken back meanwhile.
                Err(StoreError::Conflict { .. }) => {}
                Err(other) => return Err(other.into()),
            }
        }
        Ok(())
    }
}

/// Renews the claim on `brief` every third of `lease` for as long as it holds; returns once `worker` has
/// lost it (the brief was reclaimed, or moved out of `running` by someone else).
pub(crate) async fn hold_claim(
    store: Arc<dyn Blackboard>,
    brief: BriefId,
    worker: String,
    lease: chrono::Duration,
) {
    let every = lease.to_std().unwrap_or(Duration::from_secs(1)) / 3;
    loop {
        tokio::time::sleep(every).await;
        match store.renew_claim(brief, &worker, lease) {
            Ok(_) => {}
            Err(StoreError::Conflict { .. } | StoreError::NotFound { .. } | StoreError::ClaimLost { .. }) => {
                return;
            }
            // A store that is briefly unavailable: the lease has two more thirds to go; try again.
            Err(_) => {}
        }
    }
}

impl Engine {
    /// This engine, writing through `claim`'s fence ([`FencedBlackboard`]): what an agent, its sign-off
    /// and the record of its outcome write for the claimed brief is refused once the claim is gone.
    pub(crate) fn holding(&self, claim: &Claim) -> Engine {
        let mut holder = self.clone();
        holder.store = Arc::new(FencedBlackboard::new(self.store.clone(), claim.clone()));
        holder
    }

    /// The lease of this runner's claims (team.yaml `runner.claim_lease_seconds`).
    pub(crate) fn lease(&self) -> chrono::Duration {
        chrono::Duration::seconds(i64::from(self.config.runner.claim_lease_seconds.max(1)))
    }

    fn lease_std(&self) -> Duration {
        Duration::from_secs(u64::from(self.config.runner.claim_lease_seconds.max(1)))
    }

    /// Works on `run` as a worker beside the runner that drives it (another process, possibly on another
    /// machine, on the same blackboard): claims its pending briefs while no gate holds the run, runs their
    /// agents and records their outcomes, until the run ends. Tier handling, gates and merges stay with the
    /// driver. Claims of runners that died are taken back when their lease ends; nothing is taken from a
    /// live runner. Stopping on an error or when cancelled, it gives its claims back first.
    pub async fn work(&self, run: RunId, cancel: &CancelToken) -> Result<RunStatus> {
        let mut crew = Crew::new(self.config.runner.concurrency);
        let ended = match self.work_loop(run, cancel, &mut crew).await {
            Ok(status) => Ok(status),
            Err(error) => Err(crew
                .release(self.store.as_ref(), &self.options.worker, run, error)
                .await),
        };
        self.end_turn();
        // Gone: it no longer counts as a live runner (best effort: a stale offer lapses with its lease).
        let _ = self.store.forget_offer(run, &self.options.worker);
        ended
    }

    async fn work_loop(&self, run: RunId, cancel: &CancelToken, crew: &mut Crew) -> Result<RunStatus> {
        loop {
            if cancel.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let status = self.store.run_status(run)?;
            if status.is_terminal() {
                crew.abort_all();
                return Ok(status);
            }
            crew.reclaim_expired(self, run).await?;
            if self.store.pending_gates(Some(run))?.is_empty() {
                crew.fill(self, run, cancel)?;
            }
            self.end_turn();
            if crew.is_empty() {
                self.nap(self.options.poll).await;
            } else {
                crew.collect(self, self.options.poll).await?;
            }
        }
    }
}

/// Moves every brief of `run` the runner `me` holds back to `pending`, each with a `RELEASED` log line
/// (the status change's own event) naming that runner and why it stopped.
fn release_claims(store: &dyn Blackboard, me: &str, run: RunId, why: &EngineError) -> Result<()> {
    for brief in store.list_briefs_by_status(run, BriefStatus::Running)? {
        // Checked on the record just read; the compare-and-set below then refuses any other status
        // change. A claim lost to another runner between the two would need this runner's lease to
        // have run out first, and its agents were renewing it until a moment ago.
        if brief.claimed_by.as_deref() != Some(me) {
            continue;
        }
        let payload = claim_returned(
            "RELEASED",
            me,
            "runner_stopped",
            format!(
                "{}: its runner {me} stopped ({why}); free for another runner",
                brief.title
            ),
        );
        let event = NewEvent::typed(run, payload).brief(brief.id).tier(brief.tier);
        match store.update_brief_status(brief.id, BriefStatus::Running, BriefStatus::Pending, event) {
            // Finished, failed or reclaimed meanwhile: not this runner's to give back any more.
            Ok(_) | Err(StoreError::Conflict { .. }) => {}
            Err(other) => return Err(other.into()),
        }
    }
    Ok(())
}

/// The log line that is a running brief's move back to `pending` when its claim is given up (`RELEASED`)
/// or taken back (`RECLAIMED`): who held it, why, and the line shown.
fn claim_returned(tag: &str, holder: &str, reason: &str, message: String) -> EventPayload {
    EventPayload::Log(LogLine {
        from: Some(BriefStatus::Running.as_str().to_string()),
        to: Some(BriefStatus::Pending.as_str().to_string()),
        claimed_by: Some(holder.to_string()),
        reason: Some(reason.to_string()),
        ..LogLine::new("normal", Some(tag), message)
    })
}
