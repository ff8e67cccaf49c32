//! The runner's loop: a run's one driver creates the run, then turns until it ends — deliver
//! notifications, take back expired claims, tend the gates, run a pass of [`crate::advance`] when the
//! blackboard changed, fill the crew with agents, and wait for one to finish. Everything it knows it reads
//! back from the blackboard each turn, so [`Engine::drive`] is also how a killed run resumes.

use agency_core::event::payload::LogLine;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::{PLAN_TITLE, RUN_WORKSTREAM};
use agency_core::{Brief, BriefId, BriefStatus, RunId, Tier};
use agency_llm::CancelToken;
use agency_store::{NewRun, Run, RunStatus};

use crate::engine::{DriveOutcome, Engine};
use crate::error::{EngineError, Result};

impl Engine {
    /// Creates a run for `goal` at the repository's current head and writes T1's planning brief.
    pub fn start(&self, goal: &str) -> Result<Run> {
        let base = self.repo.head_rev()?;
        let mut new = NewRun::new(goal, self.repo.root().display().to_string());
        new.id = crate::branches::unused_run_id(&self.repo, RunId::new)?;
        new.base_rev = Some(base.clone());
        new.config = serde_json::to_value(&*self.config).unwrap_or_default();
        let run = self.store.create_run(new)?;
        crate::forge::remember_base(self.store.as_ref(), &self.repo, &run)?;
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
            self.record_label_needs(run)?;
            self.finish_start(&record)?;
        }
        self.release_orphaned_claims(run).await?;
        self.shelf().discard_left(run);
        let mut crew = crate::crew::Crew::new(self.config.runner.concurrency);
        let ended = match self.drive_loop(run, cancel, &mut crew, &lease).await {
            Ok(outcome) => Ok(outcome),
            Err(error) => Err(crew
                .release(self.store.as_ref(), &self.options.worker, run, error)
                .await),
        };
        self.shelf().discard();
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
        let mut outbox = crate::notify::Outbox::open(
            run,
            &self.config.notifiers,
            self.options.auto_approve,
            self.publisher(run),
        );
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
            outbox.deliver(&record).await;
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
            if !self.options.auto_approve && !paused {
                self.tend_spares(run, crew.room(), spawned)?;
            }
            self.end_turn();
            if !crew.is_empty() {
                stall.busy(self.store.as_ref(), run)?;
                crew.collect(self, self.options.poll).await?;
                continue;
            }
            if spawned || progressed || waiting || paused {
                stall.busy(self.store.as_ref(), run)?;
            } else {
                stall.quiet_turn(self, run, &mut passes)?;
            }
            if !(spawned || progressed) {
                self.nap(self.options.poll).await;
            }
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
}
