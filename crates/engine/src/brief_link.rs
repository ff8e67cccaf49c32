//! The runner's side of an agent run ([`RunnerLink`]): the teachback goes through the core state machine
//! and is reviewed by the parent tier's model (or a human, when the `teachback` gate is on); every tool
//! call is checked against the brief's teachback state; what the agent does becomes events.
//!
//! The review itself ([`review_or_outage`]; a human's goes through [`crate::teachback_gate`]) and its record on the
//! blackboard ([`review_payload`], with the [`review_message`] the agent reads) are shared with the review
//! of teachbacks external agents submit through the blackboard (`crate::board_review`) and with
//! `agency teachback approve|correct`, so a review reads the same wherever it was made.
//!
//! A reviewing model in an outage (overloaded, rate limited, unreachable, stalled, after the retries its
//! provider makes inside the call) is not the agent's fault, nor a bad review: the link keeps the outage
//! ([`BriefLink::take_reviewer_outage`]) and stops the agent, and the runner puts the brief back to wait at
//! the run's outage gate with its attempt not spent, as for the agent's own model (`crate::outage`). A
//! reviewer that answers without a review is still told to the agent, which resubmits.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_core::event::payload::{self, LogLine, TeachbackReviewed};
use agency_core::event::{EventKind, EventPayload, NewEvent};
use agency_core::teachback::{
    ReviewVerdict, Teachback, TeachbackAction, TeachbackReview, TeachbackState, allows_edits, transition,
};
use agency_core::variety::TeachbackMode;
use agency_core::{Brief, BriefId, Tier};
use agency_exec::runtime::{AgentEvent, RunnerLink, ToolCallView, ToolDecision};
use agency_llm::{
    Block, BoxFuture, CancelToken, Message, Provider, Request, Spend, ToolChoice, ToolSpec, UsageRecord,
};
use agency_store::{Blackboard, WriteBatch};
use serde_json::json;

use crate::budget::{SharedLedger, brief_scope, passed_limit};
use crate::prompts;
use crate::task::call_meta;

pub use crate::reviewer_outage::ReviewerOutage;
pub use crate::teachback_gate::Reviewed;

/// The `via` of a teachback submitted through [`RunnerLink::teachback`] (reviewed in process).
pub const VIA_RUNNER: &str = "runner";

/// Who reviews blocking teachbacks.
#[derive(Debug, Clone)]
pub enum Reviewer {
    /// The parent tier's model.
    Model(Arc<dyn Provider>),
    /// A human, through a `teachback` gate; `poll` is how often the gate is checked.
    Human { poll: Duration },
}

/// One brief's agent's link to the runner.
#[derive(Debug)]
pub struct BriefLink {
    store: Arc<dyn Blackboard>,
    brief: Brief,
    mode: TeachbackMode,
    state: Mutex<TeachbackState>,
    reviewer: Reviewer,
    cancel: CancelToken,
    /// The run's ledger, when this agent's reported usage is not metered elsewhere (an external runtime).
    ledger: Option<SharedLedger>,
    /// The reviewer's outage this agent was stopped for, until the runner takes it.
    reviewer_outage: Mutex<Option<ReviewerOutage>>,
}

/// Why a teachback has no review.
#[derive(Debug, Clone, PartialEq)]
pub enum NoReview {
    /// The reviewing model is in an outage: nobody's fault the agent can mend.
    Outage(ReviewerOutage),
    /// Anything else, said to the agent (which fixes it and resubmits).
    Message(String),
}

impl std::fmt::Display for NoReview {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoReview::Outage(outage) => write!(f, "{outage}; wait and resubmit"),
            NoReview::Message(message) => f.write_str(message),
        }
    }
}

impl From<String> for NoReview {
    fn from(message: String) -> Self {
        NoReview::Message(message)
    }
}

impl BriefLink {
    /// The link for `brief`, whose teachback state is read from the blackboard copy given.
    pub fn new(store: Arc<dyn Blackboard>, brief: Brief, reviewer: Reviewer, cancel: CancelToken) -> Self {
        let mode = brief.teachback_mode();
        let state = Mutex::new(brief.teachback);
        BriefLink {
            store,
            brief,
            mode,
            state,
            reviewer,
            cancel,
            ledger: None,
            reviewer_outage: Mutex::new(None),
        }
    }

    /// The reviewer's outage the agent was stopped for, if its teachback's review met one (taken once).
    /// The link cancels the agent's token given to [`BriefLink::new`] when it keeps one, so the runner
    /// that started the agent with that token gets its end at once and reads this instead of its outcome.
    pub fn take_reviewer_outage(&self) -> Option<ReviewerOutage> {
        self.reviewer_outage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Charges the usage the agent reports to `ledger` (the run's, for a runtime agency does not meter
    /// itself; `None` leaves it a record only).
    pub fn charging(mut self, ledger: Option<SharedLedger>) -> Self {
        self.ledger = ledger;
        self
    }

    /// Charges what an external agent reports it spent to the brief, its workstream and the run, as the
    /// metered providers charge the built-in agent's calls. The agent has already spent it, so nothing
    /// can be refused: past a limit, the run is stopped at the `budget` gate the same way (a
    /// `budget_exhausted` record, the gate opened once), and no agent starts until a human decides.
    fn charge(&self, record: &UsageRecord) {
        let Some(ledger) = &self.ledger else { return };
        let spend = Spend {
            tokens: record.usage.total(),
            usd: record.cost_usd.unwrap_or(0.0),
        };
        ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .record(&brief_scope(&self.brief), spend);
        passed_limit(&self.store, ledger, &self.brief);
    }

    fn state(&self) -> TeachbackState {
        *self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Moves the teachback state through the core machine and records it with `kind`: at once, or, for
    /// [`Record::Soon`], with the handle's next write ([`Blackboard::apply_soon`]).
    fn step(
        &self,
        action: &TeachbackAction,
        payload: impl FnOnce(TeachbackState, TeachbackState) -> EventPayload,
        record: Record,
    ) -> Result<(), String> {
        let mut guard = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let next = transition(*guard, self.mode, action).map_err(|e| e.to_string())?;
        let event = NewEvent::typed(self.brief.run, payload(*guard, next))
            .brief(self.brief.id)
            .tier(self.brief.tier);
        let mut batch = WriteBatch::new();
        batch.move_teachback(self.brief.id, *guard, next, event);
        match record {
            Record::Now => self.store.apply(batch),
            Record::Soon => self.store.apply_soon(batch),
        }
        .map_err(|e| e.to_string())?;
        *guard = next;
        Ok(())
    }

    async fn review(&self, teachback: &Teachback, since: i64) -> Result<Reviewed, NoReview> {
        review_or_outage(
            self.store.as_ref(),
            &self.reviewer,
            &self.brief,
            teachback,
            since,
            &self.cancel,
        )
        .await
    }

    /// Takes the review a human recorded on the teachback (after event `since`) as this agent's, if there
    /// is one: the teachback state follows the blackboard.
    fn adopt_recorded(&self, since: i64) -> Result<Option<TeachbackReview>, String> {
        let recorded = crate::teachback_gate::recorded_review(self.store.as_ref(), &self.brief, since)
            .map_err(|e| e.to_string())?;
        Ok(recorded.map(|(review, state)| {
            self.follow(state);
            review
        }))
    }

    /// Sets the teachback state to `state`, which the blackboard already holds.
    fn follow(&self, state: TeachbackState) {
        *self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = state;
    }
}

/// When a teachback step is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Record {
    /// In a write of its own, before the step returns.
    Now,
    /// With the next write of the same handle: the review's record, the gate a human review opens, or the
    /// agent's next record (at the latest, the runner's end of its turn).
    Soon,
}

/// Has `teachback` of `brief`, submitted at event `since`, reviewed by `reviewer`: the parent tier's model,
/// or a human through a `teachback` gate (opened on `store` and polled until decided; see
/// [`crate::teachback_gate`]). A reviewing model's outage is [`NoReview::Outage`]; any other reason there
/// is no review, a [`NoReview::Message`].
pub async fn review_or_outage(
    store: &dyn Blackboard,
    reviewer: &Reviewer,
    brief: &Brief,
    teachback: &Teachback,
    since: i64,
    cancel: &CancelToken,
) -> Result<Reviewed, NoReview> {
    match reviewer {
        Reviewer::Model(provider) => review_by_model(store, provider.as_ref(), brief, teachback, cancel)
            .await
            .map(Reviewed::New),
        Reviewer::Human { poll } => {
            crate::teachback_gate::review_by_human(store, brief, teachback, since, *poll, cancel)
                .await
                .map_err(NoReview::Message)
        }
    }
}

/// What the agent is told of a review, stored with the review's record and printed by `agency teachback
/// submit`.
pub fn review_message(review: &TeachbackReview) -> String {
    review.message("submit your teachback again")
}

/// The payload of a review's `teachback_approved` / `teachback_corrected` record: the review's own fields
/// (`verdict`, `reviewer`, `note`, as `agency teachback show` and the hook read them), the brief's title
/// and the message the agent sees. The state change's `from` and `to` are added by whoever writes it.
pub fn review_payload(brief: &Brief, review: &TeachbackReview) -> TeachbackReviewed {
    TeachbackReviewed {
        verdict: Some(review.verdict.clone()),
        reviewer: review.reviewer.clone(),
        note: review.note.clone(),
        title: Some(brief.title.clone()),
        message: Some(review_message(review)),
        ..TeachbackReviewed::default()
    }
}

/// A review's record, moving the teachback `from` → `to`: `teachback_approved` or `teachback_corrected`.
pub fn review_event(
    review: &TeachbackReview,
    payload: TeachbackReviewed,
    from: TeachbackState,
    to: TeachbackState,
) -> EventPayload {
    let payload = TeachbackReviewed {
        from: Some(from),
        to: Some(to),
        ..payload
    };
    match review.verdict {
        ReviewVerdict::Approved => EventPayload::TeachbackApproved(payload),
        ReviewVerdict::Corrections(_) => EventPayload::TeachbackCorrected(payload),
    }
}

/// The event kind of a review's record.
pub fn review_kind(review: &TeachbackReview) -> EventKind {
    match review.verdict {
        ReviewVerdict::Approved => EventKind::TeachbackApproved,
        ReviewVerdict::Corrections(_) => EventKind::TeachbackCorrected,
    }
}

/// The `usage` record of a call the runner made itself, outside any agent's link (a teachback review, an
/// agreement question): its metered provider already charged the ledger, and the record lets cost reports
/// and a budget rebuilt after a crash count it too.
pub(crate) fn usage_of_call(provider: &dyn Provider, response: &agency_llm::Response) -> EventPayload {
    EventPayload::Usage(payload::Usage {
        model: response.model.clone(),
        provider: provider.kind().to_owned(),
        input_tokens: response.usage.input,
        output_tokens: response.usage.output,
        cache_read_tokens: response.usage.cache_read,
        cache_write_tokens: response.usage.cache_write,
        cost_usd: provider
            .price()
            .map(|price| agency_llm::cost(&response.usage, &price)),
    })
}

/// The tier whose model reviews `brief`'s teachback: its parent (T1 for a brief without one).
pub fn reviewing_tier(brief: &Brief) -> Tier {
    brief.tier.parent().unwrap_or(Tier::T1)
}

/// The tool a reviewing model answers with.
fn review_tool() -> ToolSpec {
    ToolSpec {
        name: "review_teachback".into(),
        description: "Approve the teachback, or list the corrections the agent must make.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "approved": { "type": "boolean" },
                "corrections": { "type": "array", "items": { "type": "string" } },
                "note": { "type": "string" }
            },
            "required": ["approved"]
        }),
    }
}

async fn review_by_model(
    store: &dyn Blackboard,
    provider: &dyn Provider,
    brief: &Brief,
    teachback: &Teachback,
    cancel: &CancelToken,
) -> Result<TeachbackReview, NoReview> {
    let mut meta = call_meta(brief);
    meta.role = Some("teachback-reviewer".into());
    let request = Request {
        system: vec![prompts::TEACHBACK_REVIEW.to_string()],
        messages: vec![Message::user(format!(
            "## The brief\n{}\n\n## The agent's teachback\n{teachback}",
            brief.instructions.trim()
        ))],
        tools: vec![review_tool()],
        max_tokens: 2_048,
        tool_choice: Some(ToolChoice::Tool("review_teachback".into())),
        meta,
        ..Request::default()
    };
    let response = provider
        .complete(&request, &mut |_| {}, cancel)
        .await
        .map_err(|error| {
            // The provider already retried inside the call for its `outage_seconds`: what is still the
            // provider's trouble (overloaded, rate limited, 5xx, unreachable, stalled) is an outage.
            if error.is_retryable() {
                NoReview::Outage(ReviewerOutage {
                    tier: reviewing_tier(brief),
                    model: provider.model().to_string(),
                    provider: provider.kind().to_string(),
                    error,
                })
            } else {
                NoReview::Message(format!(
                    "the reviewer could not be reached ({error}); wait and resubmit"
                ))
            }
        })?;
    // The review runs outside any agent's link, which writes the usage events of agents' calls: its own is
    // written here (its provider already charged the ledger), so cost reports and the budget rebuilt after
    // a crash count it too.
    let usage = usage_of_call(provider, &response);
    // Held to ride with the next write, the review's own record, which follows at once: a commit (and
    // an fsync) of its own for every review cost the runner 0.4 write transactions per brief. A crash in
    // between loses both, and the review is asked again, recorded then (the lost call's spending is the
    // ledger's only). A record that cannot be written loses only the record: the review stands.
    let _ = store.append_event_soon(NewEvent::typed(brief.run, usage).brief(brief.id).tier(brief.tier));
    let reviewer = format!("{}/{}", reviewing_tier(brief).as_str(), brief.workstream);
    let input = response
        .content
        .iter()
        .find_map(|b| match b {
            Block::ToolUse { name, input, .. } if name == "review_teachback" => Some(input.clone()),
            _ => None,
        })
        .ok_or_else(|| NoReview::Message("the reviewer gave no review; resubmit your teachback".into()))?;
    let note = input.get("note").and_then(|v| v.as_str()).map(str::to_string);
    let approved = input.get("approved").and_then(|v| v.as_bool()).unwrap_or(false);
    let corrections: Vec<String> = input
        .get("corrections")
        .and_then(|v| v.as_array())
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let verdict = if approved {
        ReviewVerdict::Approved
    } else if corrections.iter().any(|c| !c.trim().is_empty()) {
        ReviewVerdict::Corrections(corrections)
    } else {
        // A rejection must say what to change; one that does not would leave the agent stuck.
        ReviewVerdict::Corrections(vec![
            note.clone()
                .unwrap_or_else(|| "restate the brief more precisely".into()),
        ])
    };
    Ok(TeachbackReview {
        verdict,
        reviewer,
        note,
    })
}

impl RunnerLink for BriefLink {
    fn teachback<'a>(&'a self, teachback: &'a Teachback) -> BoxFuture<'a, Result<TeachbackReview, String>> {
        Box::pin(async move {
            teachback
                .validate()
                .map_err(|e| format!("{e}; fill every field and resubmit"))?;
            if self.state() == TeachbackState::Active {
                // Accepted in an earlier life of this brief (restarted after its runner stopped): an
                // approval, not an error, so the read-only teachback step of a command or pi agent ends and
                // its program starts, instead of the step resubmitting until its turns run out.
                return Ok(TeachbackReview {
                    verdict: ReviewVerdict::Approved,
                    reviewer: "an earlier review".into(),
                    note: Some("this brief's teachback was already accepted".into()),
                });
            }
            // Where a review recorded by hand would start: it comes after the submission.
            let since = self
                .store
                .last_seq(Some(self.brief.run))
                .map_err(|e| e.to_string())?;
            // `via: runner` marks a teachback this runner reviews in process, which the review of
            // blackboard submissions must leave alone.
            let submitted = payload::TeachbackSubmitted {
                title: Some(self.brief.title.clone()),
                // A plain struct of strings and lists: serialising it cannot fail.
                teachback: serde_json::to_value(teachback).unwrap_or_default(),
                via: Some(VIA_RUNNER.to_string()),
                ..payload::TeachbackSubmitted::default()
            };
            // Nothing waits for the submission's record: this runner reviews it in process, and the
            // agent's edits are gated on the state held here. So it rides with the review's record (one
            // commit for the two); a runner killed before that loses it with the agent, whose brief then
            // starts over and submits again. It may also ride out with another write of the handle first
            // (another agent's record): a runner killed then leaves the brief `under_review` with nobody
            // reviewing it, as the review died with that runner. The runner that took the brief over
            // reviews the new submission instead of refusing it (a submission is illegal under review),
            // which would leave its agent denied every edit, reporting done with nothing changed.
            if self.state() != TeachbackState::UnderReview {
                self.step(
                    &TeachbackAction::Submit,
                    |from, to| {
                        EventPayload::TeachbackSubmitted(payload::TeachbackSubmitted {
                            from: Some(from),
                            to: Some(to),
                            ..submitted
                        })
                    },
                    Record::Soon,
                )?;
            }
            if self.mode == TeachbackMode::Advisory {
                return Ok(TeachbackReview {
                    verdict: ReviewVerdict::Approved,
                    reviewer: "advisory".into(),
                    note: Some("advisory brief: recorded, proceed".into()),
                });
            }
            let reviewed = match self.review(teachback, since).await {
                Ok(reviewed) => reviewed,
                Err(NoReview::Outage(outage)) => {
                    // Not the agent's to mend: the agent stops here, its brief waits at the outage gate
                    // (attempt not spent) and starts again from its teachback once the run resumes.
                    let told = format!(
                        "{outage}. The runner stops you now and starts this brief again once the reviewer \
                         answers; nothing is held against you."
                    );
                    *self
                        .reviewer_outage
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(outage);
                    self.cancel.cancel();
                    return Err(told);
                }
                Err(NoReview::Message(message)) => return Err(message),
            };
            let review = match reviewed {
                Reviewed::New(review) => review,
                Reviewed::Recorded(review, state) => {
                    self.follow(state);
                    return Ok(review);
                }
            };
            let payload = review_payload(&self.brief, &review);
            let record = |from, to| review_event(&review, payload, from, to);
            if let Err(problem) = self.step(&review.action(), record, Record::Now) {
                // A human recorded a review while this one was being made: theirs stands.
                return self.adopt_recorded(since)?.ok_or(problem);
            }
            Ok(review)
        })
    }

    fn check_tool(&self, call: &ToolCallView<'_>) -> ToolDecision {
        if call.read_only || allows_edits(self.state(), self.mode) {
            return ToolDecision::Allow;
        }
        let reason = match self.state() {
            TeachbackState::Pending => {
                "Denied: this brief's teachback is blocking and has not been sent. Call submit_teachback with your \
                 restatement of the brief first; edits are allowed once it is approved."
            }
            TeachbackState::UnderReview => {
                "Denied: your teachback is under review. Wait for the review before editing."
            }
            TeachbackState::Correcting => {
                "Denied: your teachback needs corrections. Address each one and call submit_teachback again."
            }
            TeachbackState::Active => "Denied.",
        };
        let event = NewEvent::typed(
            self.brief.run,
            EventPayload::TeachbackDenied(payload::TeachbackDenied {
                title: Some(self.brief.title.clone()),
                tool: call.name.to_string(),
                state: Some(self.state()),
                ..payload::TeachbackDenied::default()
            }),
        )
        .brief(self.brief.id)
        .tier(self.brief.tier);
        // The denial itself is what matters to the agent; a failure to record it must not turn it into an allow.
        let _ = self.store.append_event(event);
        ToolDecision::Deny(reason.to_string())
    }

    fn propose_path_amendment(
        &self,
        reason: &str,
        mut change: agency_core::event::payload::PathChange,
    ) -> Result<String, String> {
        if change.workstream.trim().is_empty() {
            change.workstream = self.brief.workstream.clone();
        }
        let proposer = crate::amendments::Proposer::agent(&self.brief);
        let recorded =
            crate::amendments::propose(self.store.as_ref(), self.brief.run, &proposer, reason, change)?;
        Ok(format!(
            "recorded as path amendment #{}: the tiers above are told and a human decides at the next gate; \
             carry on with your task",
            recorded.seq
        ))
    }

    fn record(&self, event: AgentEvent) {
        let mut spent = None;
        let payload = match event {
            AgentEvent::ToolCall {
                name,
                summary,
                allowed,
            } => EventPayload::Log(LogLine {
                allowed: Some(allowed),
                ..LogLine::new(
                    "verbose",
                    Some("TOOL"),
                    format!("{} {name} {summary}", self.brief.title),
                )
            }),
            AgentEvent::Said(text) => EventPayload::Log(LogLine::new("debug", Some("SAID"), text)),
            AgentEvent::Note(text) => EventPayload::Log(LogLine::new("verbose", Some("AGENT"), text)),
            AgentEvent::Process(identity) => {
                // Its own record, written at once: see crate::leftovers.
                let _ = crate::leftovers::record(self.store.as_ref(), &self.brief, &identity);
                return;
            }
            AgentEvent::Usage(record) => {
                let payload = EventPayload::Usage(payload::Usage {
                    model: record.model.clone(),
                    provider: record.provider.clone(),
                    input_tokens: record.usage.input,
                    output_tokens: record.usage.output,
                    cache_read_tokens: record.usage.cache_read,
                    cache_write_tokens: record.usage.cache_write,
                    cost_usd: record.cost_usd,
                });
                spent = Some(record);
                payload
            }
        };
        let event = NewEvent::typed(self.brief.run, payload)
            .brief(self.brief.id)
            .tier(self.brief.tier);
        match spent {
            // Spending is what the run's budget is rebuilt from after a crash: written at once, and charged
            // after its record, so a budget it passes is reported after the spending that passed it.
            Some(record) => {
                let _ = self.store.append_event(event);
                self.charge(&record);
            }
            // A log line rides with the runner's next write (at most a turn of its loop later) instead of a
            // commit of its own: an agent makes dozens of tool calls.
            None => {
                let _ = self.store.append_event_soon(event);
            }
        }
    }
}

/// The id of the brief this link serves.
impl BriefLink {
    /// The brief.
    pub fn brief_id(&self) -> BriefId {
        self.brief.id
    }
}

#[cfg(test)]
mod tests {
    use agency_core::variety::Variety;
    use agency_llm::LlmError;
    use agency_llm::scripted::{Script, ScriptedProvider};
    use agency_store::conformance::sample_brief;
    use agency_store::{NewRun, SqliteBlackboard};

    use super::*;

    /// A brief whose teachback an earlier runner left `under_review` when it died: its submission was
    /// written, its in-process review never was.
    #[tokio::test]
    async fn a_teachback_a_dead_runner_left_under_review_is_reviewed_by_the_runner_taking_over() {
        let store: Arc<dyn Blackboard> = Arc::new(SqliteBlackboard::open_in_memory().unwrap());
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let brief = Brief {
            variety: Some(Variety {
                novelty: 4,
                scope: 4,
                uncertainty: 4,
                risk: 4,
            }),
            ..sample_brief(run, "parser")
        };
        assert_eq!(brief.teachback_mode(), TeachbackMode::Blocking);
        store.insert_brief(&brief).unwrap();
        let teachback = Teachback {
            building: "the parser".into(),
            key_constraints: vec!["no new dependency".into()],
            interfaces: Vec::new(),
            files: Vec::new(),
            approach: "a table".into(),
            most_likely_wrong: "the grammar".into(),
            least_confident: "escapes".into(),
            first_action: None,
        };
        let submitted = NewEvent::typed(
            run,
            EventPayload::TeachbackSubmitted(payload::TeachbackSubmitted {
                from: Some(TeachbackState::Pending),
                to: Some(TeachbackState::UnderReview),
                via: Some(VIA_RUNNER.to_string()),
                ..payload::TeachbackSubmitted::default()
            }),
        )
        .brief(brief.id);
        store
            .set_teachback_state(
                brief.id,
                TeachbackState::Pending,
                TeachbackState::UnderReview,
                submitted,
            )
            .unwrap();
        let taken_over = store.get_brief(brief.id).unwrap();
        let script = Script::from_yaml(
            "model: scripted\nreplies:\n  - role: teachback-reviewer\n    reply:\n      tool_calls:\n        \
             - name: review_teachback\n          input: { approved: true, note: ok }\n",
        )
        .unwrap();
        let link = BriefLink::new(
            store.clone(),
            taken_over,
            Reviewer::Model(Arc::new(ScriptedProvider::new(script))),
            CancelToken::new(),
        );

        let review = link.teachback(&teachback).await.unwrap();
        assert_eq!(review.verdict, ReviewVerdict::Approved);
        assert_eq!(link.state(), TeachbackState::Active);
        assert_eq!(
            store.get_brief(brief.id).unwrap().teachback,
            TeachbackState::Active
        );
    }

    /// A brief whose teachback blocks, on a fresh blackboard.
    fn blocking_brief(store: &Arc<dyn Blackboard>) -> Brief {
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let brief = Brief {
            variety: Some(Variety {
                novelty: 4,
                scope: 4,
                uncertainty: 4,
                risk: 4,
            }),
            ..sample_brief(run, "parser")
        };
        store.insert_brief(&brief).unwrap();
        brief
    }

    fn a_teachback() -> Teachback {
        Teachback {
            building: "the parser".into(),
            key_constraints: vec!["no new dependency".into()],
            interfaces: Vec::new(),
            files: Vec::new(),
            approach: "a table".into(),
            most_likely_wrong: "the grammar".into(),
            least_confident: "escapes".into(),
            first_action: None,
        }
    }

    /// The reviewer answering every review with `reply` (YAML of a scripted reply).
    fn reviewer_replying(reply: &str) -> Reviewer {
        let script = Script::from_yaml(&format!(
            "model: review-model\nreplies:\n  - role: teachback-reviewer\n    reply: {reply}\n"
        ))
        .unwrap();
        Reviewer::Model(Arc::new(ScriptedProvider::new(script)))
    }

    #[tokio::test]
    async fn a_reviewer_in_an_outage_stops_the_agent_and_is_kept_for_the_runner_not_told_as_a_review() {
        let store: Arc<dyn Blackboard> = Arc::new(SqliteBlackboard::open_in_memory().unwrap());
        let brief = blocking_brief(&store);
        let agent = CancelToken::new();
        let link = BriefLink::new(
            store.clone(),
            brief.clone(),
            reviewer_replying("{error: {kind: overloaded, message: busy}}"),
            agent.clone(),
        );

        let told = link.teachback(&a_teachback()).await.unwrap_err();
        assert!(told.contains("The runner stops you now"), "{told}");
        assert!(agent.is_cancelled(), "the agent is stopped");
        let outage = link.take_reviewer_outage().expect("the outage is kept");
        assert_eq!(
            (outage.tier, outage.model.as_str(), outage.provider.as_str()),
            (Tier::T3, "review-model", "scripted")
        );
        assert!(matches!(outage.error, LlmError::Overloaded { .. }), "{outage:?}");
        assert_eq!(link.take_reviewer_outage(), None, "taken once");
        // Still under review: nothing was corrected, and the restarted agent's resubmission is reviewed.
        assert_eq!(link.state(), TeachbackState::UnderReview);
    }

    #[tokio::test]
    async fn a_reviewer_that_answers_without_a_review_or_refuses_the_request_is_not_an_outage() {
        for reply in [
            "{text: \"looks fine to me\"}",
            "{error: {kind: bad_request, message: \"prompt is too long\"}}",
        ] {
            let store: Arc<dyn Blackboard> = Arc::new(SqliteBlackboard::open_in_memory().unwrap());
            let brief = blocking_brief(&store);
            let agent = CancelToken::new();
            let link = BriefLink::new(store.clone(), brief, reviewer_replying(reply), agent.clone());

            let told = link.teachback(&a_teachback()).await.unwrap_err();
            assert!(told.contains("resubmit"), "{reply}: {told}");
            assert!(!agent.is_cancelled(), "{reply}: the agent goes on");
            assert_eq!(link.take_reviewer_outage(), None, "{reply}");
        }
    }
}
