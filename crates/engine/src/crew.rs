//! The runner's agents and its claims on their briefs. A runner claims pending briefs up to its concurrency
//! and runs one agent per claim; while an agent works, its claim is renewed every third of the lease
//! (team.yaml `runner.claim_lease_seconds`), and a claim the runner lost (taken back after its lease ran
//! out, or its brief cancelled by an escalation) stops that agent and drops its outcome. Every runner on a
//! blackboard also takes back claims whose lease ended — their runner died — so with several runners on one
//! PostgreSQL blackboard a dead worker's brief is picked up again, by exactly one of the others.
//!
//! [`Engine::drive`] (the run's driver: tier handling, gates, merges) and [`Engine::work`] (a worker that
//! only runs agents for a run someone else drives) share this.

use std::time::{Duration, Instant};

use agency_core::{BriefId, RunId};
use agency_exec::runtime::{AgentOutcome, RuntimeError};
use agency_llm::CancelToken;
use agency_store::{Blackboard, RunStatus, StoreError};
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
}

/// The agents one runner has in flight.
pub(crate) struct Crew {
    agents: JoinSet<(BriefId, AgentEnd)>,
    concurrency: usize,
    reclaim_due: Instant,
}

impl Crew {
    pub(crate) fn new(engine: &Engine) -> Self {
        Crew {
            agents: JoinSet::new(),
            concurrency: usize::try_from(engine.config.runner.concurrency.max(1)).unwrap_or(1),
            reclaim_due: Instant::now(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Stops every agent (the runner is ending).
    pub(crate) fn abort_all(&mut self) {
        self.agents.abort_all();
    }

    /// Claims pending briefs of `run` and starts their agents, up to the concurrency limit. Returns
    /// whether any started.
    pub(crate) fn fill(&mut self, engine: &Engine, run: RunId, cancel: &CancelToken) -> Result<bool> {
        let mut spawned = false;
        while self.agents.len() < self.concurrency {
            let Some(brief) =
                engine
                    .store
                    .claim_next_brief(Some(run), &engine.options.worker, engine.lease())?
            else {
                break;
            };
            engine.spawn_agent(&mut self.agents, brief, cancel)?;
            spawned = true;
        }
        Ok(spawned)
    }

    /// Waits up to `poll` for an agent to finish, then records it and every other agent that has
    /// finished meanwhile: one pass over the run per batch of finished agents, not one per agent.
    pub(crate) async fn collect(&mut self, engine: &Engine, poll: Duration) -> Result<()> {
        tokio::select! {
            joined = self.agents.join_next() => {
                if let Some(joined) = joined {
                    let (brief, end) = joined.map_err(|e| EngineError::State(format!("agent task: {e}")))?;
                    engine.finish_agent(brief, end).await?;
                    while let Some(joined) = self.agents.try_join_next() {
                        let (brief, end) = joined.map_err(|e| EngineError::State(format!("agent task: {e}")))?;
                        engine.finish_agent(brief, end).await?;
                    }
                }
            }
            () = tokio::time::sleep(poll) => {}
        }
        Ok(())
    }

    /// Takes back the run's claims whose lease ended (their runner died), at most every quarter lease.
    pub(crate) fn reclaim_expired(&mut self, engine: &Engine, run: RunId) -> Result<()> {
        if Instant::now() < self.reclaim_due {
            return Ok(());
        }
        self.reclaim_due = Instant::now() + engine.lease_std() / 4;
        for brief in engine.store.reclaim_expired(Some(run), chrono::Utc::now())? {
            engine.log(
                run,
                Some(brief.tier),
                "RECLAIMED",
                format!(
                    "{}: its runner stopped renewing its claim; it starts again",
                    brief.title
                ),
            )?;
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
            Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => return,
            // A store that is briefly unavailable: the lease has two more thirds to go; try again.
            Err(_) => {}
        }
    }
}

impl Engine {
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
    /// live runner.
    pub async fn work(&self, run: RunId, cancel: &CancelToken) -> Result<RunStatus> {
        let mut crew = Crew::new(self);
        loop {
            if cancel.is_cancelled() {
                crew.abort_all();
                return Err(EngineError::Cancelled);
            }
            let record = self.store.get_run(run)?;
            if record.status.is_terminal() {
                crew.abort_all();
                return Ok(record.status);
            }
            crew.reclaim_expired(self, run)?;
            if self.store.pending_gates(Some(run))?.is_empty() {
                crew.fill(self, run, cancel)?;
            }
            if crew.is_empty() {
                tokio::time::sleep(self.options.poll).await;
            } else {
                crew.collect(self, self.options.poll).await?;
            }
        }
    }
}
