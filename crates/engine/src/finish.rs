//! Recording what an agent's run came to: a valid report moves its brief to `verifying` for
//! [`crate::advance`]; a refused budget, a model outage, a signal, a partial or blocked report, or no
//! report at all each go where the escalation ladder and the gates say.

use agency_core::event::payload::{self, BriefStatusChange};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::BriefRole;
use agency_core::{BriefId, BriefStatus};
use agency_exec::runtime::{AgentStop, ReportStatus, RuntimeError};
use agency_flow::reports::{self, AfterAgent, Ending, Status, Stop};
use agency_store::WriteBatch;

use crate::artifacts::{output_name, report_name, text_artifact};
use crate::crew::AgentEnd;
use crate::engine::Engine;
use crate::error::Result;
use crate::failure::{blocked, fail_brief};
use crate::outputs::check_output;
use crate::task::stamp_runner_facts;

impl Engine {
    /// Records an agent's outcome: a valid report moves the brief to `verifying` for [`crate::advance`];
    /// anything else is a failure for the escalation ladder. The move to `verifying` is held back
    /// ([`Blackboard::apply_soon`]) for the caller to write with those of the other agents that finished
    /// together ([`crate::crew::Crew::collect`]).
    pub(crate) async fn finish_agent(&self, id: BriefId, end: AgentEnd) -> Result<()> {
        if matches!(end, AgentEnd::ClaimLost) {
            return Ok(());
        }
        let brief = self.store.get_brief(id)?;
        // Cancelled meanwhile, or reclaimed by another runner after this one's lease ran out: the brief is
        // no longer this agent's to report on.
        if brief.status != BriefStatus::Running
            || brief.claimed_by.as_deref() != Some(self.options.worker.as_str())
        {
            return Ok(());
        }
        let role = BriefRole::of(&brief);
        // A writer whose worktree's filesystem is full when it ends: its writes may have failed for want of
        // space, so whatever it reports is not taken for its work. Infrastructure: the runner stops, naming
        // the disk, and gives the brief back unspent; it starts again once space is freed and the run resumed.
        if role.writes()
            && let Some(full) =
                crate::outage::disk_full_after(self.store.as_ref(), &self.options.worktrees, &brief)?
        {
            return Err(full);
        }
        let outcome = match end {
            AgentEnd::Finished(outcome) => *outcome,
            // Not the agent's outcome: it was stopped before any edit (its teachback was never approved),
            // and starts again from its teachback once the reviewer answers.
            AgentEnd::ReviewerOutage(outage) => {
                return crate::outage::pause_for_reviewer(self, &brief, &outage);
            }
            AgentEnd::ClaimLost => return Ok(()),
        };
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
        // What the end means is the decision core's ([`agency_flow::reports::after_agent`]); the runtime's
        // types are read into its terms here.
        let mut outcome = outcome;
        let mut report = outcome.as_mut().ok().and_then(|o| o.report.take());
        if let Some(report) = &mut report {
            stamp_runner_facts(&brief, &mut report.output);
        }
        let (refusal, error);
        let ending = match (&outcome, &report) {
            (Err(RuntimeError::Model(agency_llm::LlmError::Budget(exceeded))), _) => {
                refusal = exceeded.to_string();
                Ending::BudgetRefused(&refusal)
            }
            (Err(RuntimeError::Model(err)), _) if crate::outage::is_outage(err) => Ending::Outage,
            (Err(err), _) => {
                error = err.to_string();
                Ending::CouldNotRun(&error)
            }
            (Ok(outcome), _) if matches!(outcome.stop, AgentStop::Signal(_)) => Ending::Signal,
            (Ok(outcome), None) => Ending::NoReport(stop_of(&outcome.stop)),
            (Ok(_), Some(report)) => Ending::Reported(status_of(report.status)),
        };
        // Only a report that is taken as the agent's outcome is checked against its role's schema.
        let problems = match (&ending, &report) {
            (Ending::Reported(_), Some(report)) => check_output(role, &report.output).err(),
            _ => None,
        };
        let ending = match &problems {
            Some(problems) => Ending::Invalid(role, problems),
            None => ending,
        };
        // The core answers from `ending`, which was read from `outcome` and `report` above: the `else`
        // branches below cannot be taken.
        let report = match reports::after_agent(ending) {
            AfterAgent::GiveBack(reason) => {
                // The call was refused before it was made. The brief waits at the budget gate (already
                // open) and starts again once a human raises the limit.
                self.move_brief(&brief, BriefStatus::Pending, BriefStatusChange::because(reason))?;
                return Ok(());
            }
            AfterAgent::PauseForOutage => {
                let Err(RuntimeError::Model(err)) = &outcome else {
                    return Ok(());
                };
                return crate::outage::pause_for(self, &brief, err);
            }
            AfterAgent::RaiseSignal => {
                let Ok(agency_exec::runtime::AgentOutcome {
                    stop: AgentStop::Signal(signal),
                    ..
                }) = &outcome
                else {
                    return Ok(());
                };
                return crate::failure::signal(self.store.as_ref(), &brief, signal);
            }
            AfterAgent::Fail(why) => return fail_brief(self, &brief, &why),
            AfterAgent::Verify | AfterAgent::Salvage | AfterAgent::Block => match report {
                Some(report) => report,
                None => return Ok(()),
            },
        };
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
        let status = status_of(report.status);
        let resolved = reports::resolves_a_retry(brief.attempt, status);
        let payload = EventPayload::Completed(payload::Completed {
            title: brief.title.clone(),
            status: status.as_str().to_string(),
            summary: report.summary.clone(),
            attempt: brief.attempt,
            note: resolved.then(|| "retry resolved".to_string()),
        });
        match report.status {
            ReportStatus::Done => {
                // Through a shared remote the slice leaves this machine before it is reported: committed
                // and pushed here, or failed with the reason.
                if role == BriefRole::Implementer && self.options.remote.is_some() {
                    let branches = self.branches(brief.run);
                    let pushed = branches
                        .commit_brief(&brief)
                        .map_err(|e| e.to_string())
                        .and_then(|_| crate::remote::push_slice(&self.branches(brief.run), &brief));
                    if let Err(why) = pushed {
                        self.apply(batch)?;
                        return fail_brief(self, &brief, &format!("its work could not be shared: {why}"));
                    }
                    // A worker verifies what it pushed here, in its own clone (crate::handover).
                    crate::handover::verify_where_made(self, &brief).await?;
                    branches.remove_worktree(&brief);
                }
                let event = NewEvent::typed(brief.run, payload).brief(id).tier(brief.tier);
                batch.move_brief(id, BriefStatus::Running, BriefStatus::Verifying, event);
                self.apply_soon(batch)
            }
            ReportStatus::Partial => {
                self.apply(batch)?;
                // The seed's "salvage the good parts, re-task the remainder": what the implementer did is
                // committed on its branch, and its next attempt starts from there ([`Engine::salvaged_base`]).
                let kept = role == BriefRole::Implementer
                    && self.branches(brief.run).commit_brief(&brief).is_ok()
                    && brief.branch.is_some()
                    // Through a shared remote, the next attempt may start on another machine.
                    && crate::remote::push_slice(&self.branches(brief.run), &brief).is_ok();
                let why = reports::partial_why(&report.summary, kept);
                fail_brief(self, &brief, &why)
            }
            ReportStatus::Blocked => {
                self.apply(batch)?;
                blocked(self, &brief, &report.summary)
            }
        }
    }
}

/// The decision core's reading of why an agent stopped without a report.
fn stop_of(stop: &AgentStop) -> Stop<'_> {
    match stop {
        AgentStop::TurnLimit => Stop::TurnLimit,
        AgentStop::Timeout => Stop::Timeout,
        AgentStop::Cancelled => Stop::Cancelled,
        AgentStop::Mistake(why) => Stop::Mistake(why),
        AgentStop::Finished | AgentStop::Signal(_) => Stop::Other,
    }
}

/// The decision core's reading of a report's status.
fn status_of(status: ReportStatus) -> Status {
    match status {
        ReportStatus::Done => Status::Done,
        ReportStatus::Partial => Status::Partial,
        ReportStatus::Blocked => Status::Blocked,
    }
}
