//! Recording what an agent's run came to: a valid report moves its brief to `verifying` for
//! [`crate::advance`]; a refused budget, a model outage, a signal, a partial or blocked report, or no
//! report at all each go where the escalation ladder and the gates say.

use agency_core::event::payload::{self, BriefStatusChange};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::BriefRole;
use agency_core::{BriefId, BriefStatus};
use agency_exec::runtime::{AgentStop, RuntimeError};
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
            && let Some(full) = crate::outage::disk_full_after(self, &brief)?
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
                return fail_brief(self, &brief, &format!("the agent could not run: {err}"));
            }
        };
        if let AgentStop::Signal(signal) = &outcome.stop {
            return crate::failure::signal(self, &brief, signal);
        }
        let Some(report) = outcome.report else {
            let why = match &outcome.stop {
                AgentStop::TurnLimit => "used all its turns without reporting",
                AgentStop::Timeout => "ran past its time limit",
                AgentStop::Cancelled => "was cancelled",
                AgentStop::Mistake(why) => why,
                _ => "stopped without reporting its result",
            };
            return fail_brief(self, &brief, &format!("the agent {why}"));
        };
        let mut report = report;
        stamp_runner_facts(&brief, &mut report.output);
        if let Err(problems) = check_output(role, &report.output) {
            return fail_brief(
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
            agency_exec::runtime::ReportStatus::Partial => {
                self.apply(batch)?;
                // The seed's "salvage the good parts, re-task the remainder": what the implementer did is
                // committed on its branch, and its next attempt starts from there ([`Engine::salvaged_base`]).
                let kept = role == BriefRole::Implementer
                    && self.branches(brief.run).commit_brief(&brief).is_ok()
                    && brief.branch.is_some()
                    // Through a shared remote, the next attempt may start on another machine.
                    && crate::remote::push_slice(&self.branches(brief.run), &brief).is_ok();
                let why = if kept {
                    format!(
                        "partial: {}\nWhat it did is kept: the next attempt starts from its work and does what \
                         remains.",
                        report.summary
                    )
                } else {
                    format!("partial: {}", report.summary)
                };
                fail_brief(self, &brief, &why)
            }
            agency_exec::runtime::ReportStatus::Blocked => {
                self.apply(batch)?;
                blocked(self, &brief, &report.summary)
            }
        }
    }
}
