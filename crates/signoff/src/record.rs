//! Writing a sign-off to the blackboard: `signoff_started`, the verify record as an artifact plus
//! `signoff_verify`, the judge transcript as an artifact, and one of `signoff_accepted`,
//! `signoff_rejected`, `signoff_inconclusive`. The accepted event *is* the sign-off record that tells a
//! signed-off goal from one ticked by hand.

use agency_core::event::{EventPayload, payload};
use agency_core::{BriefId, NewEvent, RunId, Tier};
use agency_store::{ArtifactId, Blackboard, NewArtifact, WriteBatch};

use crate::SignoffError;
use crate::outcome::{Outcome, SignoffReport, verdict_word};
use crate::verify_command::VerifyResult;

/// Where a sign-off is recorded: a run (and the brief under review, in a runner-owned run).
#[derive(Debug, Clone, Copy)]
pub struct Recording<'a> {
    /// The blackboard.
    pub store: &'a dyn Blackboard,
    /// The run the events belong to.
    pub run: RunId,
    /// The brief under review, if any.
    pub brief: Option<BriefId>,
    /// The tier its events are shown under (T5 for a slice, T1 for a run's acceptance), if any.
    pub tier: Option<Tier>,
    /// The outcome rides with the writer's next write ([`Blackboard::apply_soon`]) instead of a commit of
    /// its own: for a runner's sign-off, whose agent's end is written right after it. A one-off sign-off
    /// (`agency goal complete`) writes it at once.
    pub outcome_soon: bool,
}

impl Recording<'_> {
    fn new_event(&self, payload: EventPayload) -> NewEvent {
        let mut event = NewEvent::typed(self.run, payload);
        if let Some(brief) = self.brief {
            event = event.brief(brief);
        }
        if let Some(tier) = self.tier {
            event = event.tier(tier);
        }
        event
    }

    fn new_artifact(&self, name: String, content_type: &str, bytes: Vec<u8>) -> NewArtifact {
        let artifact = NewArtifact::new(self.run, name, content_type, bytes);
        match self.brief {
            Some(brief) => artifact.brief(brief),
            None => artifact,
        }
    }

    /// Writes `batch` in one transaction: a record and the event that names it land together or not at all.
    fn write(&self, batch: WriteBatch) -> Result<(), SignoffError> {
        self.store.apply(batch).map_err(SignoffError::Store)
    }

    /// `signoff_started`: a line of the record that nothing waits on, so it rides with the sign-off's next
    /// write (or the runner's, whichever comes first) instead of a commit of its own
    /// ([`agency_store::Blackboard::append_event_soon`]).
    pub fn started(&self, subject: &str, commit: &str, base: &str) -> Result<(), SignoffError> {
        let event = self.new_event(EventPayload::SignoffStarted(payload::SignoffStarted {
            subject: subject.to_string(),
            commit: commit.to_string(),
            base: base.to_string(),
        }));
        self.store.append_event_soon(event).map_err(SignoffError::Store)
    }

    /// The verify record of `commit` as `signoff/<subject>/verify` (JSON) and `signoff_verify`.
    pub fn verify(
        &self,
        subject: &str,
        commit: &str,
        result: &VerifyResult,
    ) -> Result<ArtifactId, SignoffError> {
        let bytes = serde_json::to_vec_pretty(result).map_err(|e| SignoffError::Internal(e.to_string()))?;
        let artifact = self.new_artifact(format!("signoff/{subject}/verify"), "application/json", bytes);
        let id = artifact.id;
        let tail = crate::verify_command::last_bytes(&result.tail, 1024);
        let event = self.new_event(EventPayload::SignoffVerify(payload::SignoffVerify {
            subject: Some(subject.to_string()),
            rev: commit.to_string(),
            command: result.command.clone(),
            exit_code: result.exit_code.map(i64::from),
            timed_out: Some(result.timed_out),
            duration_ms: result.duration_ms,
            passed: result.passed,
            tail: tail.to_string(),
            artifact: Some(id.to_string()),
            ..payload::SignoffVerify::default()
        }));
        let mut batch = WriteBatch::new();
        batch.put_artifact(artifact).append_event(event);
        self.write(batch)?;
        Ok(id)
    }

    /// The judge transcript as `signoff/<subject>/judge` (markdown), to be written with the outcome (see
    /// [`Recording::outcome`]); its id is known now, for the report to name.
    pub fn transcript(&self, subject: &str, transcript: &str) -> NewArtifact {
        self.new_artifact(
            format!("signoff/{subject}/judge"),
            "text/markdown",
            transcript.as_bytes().to_vec(),
        )
    }

    /// The auditor's transcript as `signoff/<subject>/audit` (markdown), to be written with the outcome (see
    /// [`Recording::outcome_audited`]).
    pub fn audit_transcript(&self, subject: &str, transcript: &str) -> NewArtifact {
        self.new_artifact(
            format!("signoff/{subject}/audit"),
            "text/markdown",
            transcript.as_bytes().to_vec(),
        )
    }

    /// The judge's transcript, when there is one, and the outcome event, in one write.
    pub fn outcome(
        &self,
        report: &SignoffReport,
        transcript: Option<NewArtifact>,
    ) -> Result<(), SignoffError> {
        self.outcome_audited(report, transcript, None)
    }

    /// The judge's and the auditor's transcripts, `signoff_audit` when the auditor ran, and the outcome
    /// event, in one write.
    pub fn outcome_audited(
        &self,
        report: &SignoffReport,
        transcript: Option<NewArtifact>,
        audit_transcript: Option<NewArtifact>,
    ) -> Result<(), SignoffError> {
        let record = payload::SignoffOutcome {
            subject: report.subject.clone(),
            commit: report.commit.clone(),
            base: report.base.clone(),
            verify_artifact: report.verify_artifact.map(|a| a.to_string()),
            judge_artifact: report.transcript_artifact.map(|a| a.to_string()),
            summary: report.judge_answer.clone(),
            outcome: report.outcome.word().to_string(),
            ..payload::SignoffOutcome::default()
        };
        let payload = match &report.outcome {
            Outcome::Accepted => EventPayload::SignoffAccepted(record),
            Outcome::Rejected { by, missing } => EventPayload::SignoffRejected(payload::SignoffOutcome {
                by: Some(by.word().to_string()),
                missing: Some(missing.clone()),
                ..record
            }),
            Outcome::Inconclusive { reason } => EventPayload::SignoffInconclusive(payload::SignoffOutcome {
                reason: Some(reason.clone()),
                ..record
            }),
        };
        let mut batch = WriteBatch::new();
        if let Some(transcript) = transcript {
            batch.put_artifact(transcript);
        }
        if let Some(transcript) = audit_transcript {
            batch.put_artifact(transcript);
        }
        if let (Some(audit), Some(judged)) = (&report.audit, &report.judge) {
            let (judge, auditor) = (verdict_word(judged), verdict_word(&audit.verdict));
            let audited = payload::SignoffAudit {
                subject: report.subject.clone(),
                commit: report.commit.clone(),
                verdict: auditor.to_string(),
                judge: judge.to_string(),
                agrees: judge == auditor,
                missing: match &audit.verdict {
                    Ok(crate::JudgeVerdict::Reject { missing }) => Some(missing.clone()),
                    _ => None,
                },
                reason: audit.verdict.as_ref().err().cloned(),
                summary: audit.answer.clone(),
                transcript: audit.transcript_artifact.map(|a| a.to_string()),
                model: audit.model.clone(),
            };
            batch.append_event(self.new_event(EventPayload::SignoffAudit(audited)));
        }
        batch.append_event(self.new_event(payload));
        if self.outcome_soon {
            self.store.apply_soon(batch).map_err(SignoffError::Store)
        } else {
            self.write(batch)
        }
    }
}
