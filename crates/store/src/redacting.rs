//! [`RedactingBlackboard`]: any backend, with every secret taken out of what is written to it. It is the
//! one place redaction happens for the blackboard: every event payload, artifact, brief text, gate summary
//! and decision note passes through one [`Redactor`] on its way in, whoever writes it (an agent's runtime,
//! the runner, a sign-off, the CLI), so what reads the blackboard — the dashboard's API, the live log and a
//! detached runner's log file, notifications, a pull request's body — only ever sees redacted text.
//!
//! What is not redacted: ids, statuses, artifact names and a brief's `inputs` (they are references other
//! rows are found by), branch and worktree paths, and a brief's contract (it is compared with the plan file
//! it was agreed in; a redacted copy would read as a softened contract).

use std::borrow::Cow;
use std::sync::Arc;

use agency_core::redact::Redactor;
use agency_core::teachback::TeachbackState;
use agency_core::{
    Brief, BriefId, BriefStatus, Event, EventKind, Gate, GateDecision, GateId, GateKind, NewEvent, RunId,
    Tier,
};
use chrono::{DateTime, Utc};

use crate::Blackboard;
use crate::batch::{Change, Fence, WriteBatch};
use crate::driver::DriverLease;
use crate::error::Result;
use crate::record::{
    Artifact, ArtifactId, ArtifactMeta, BriefState, Claim, Claimed, NewArtifact, NewGate, NewRun, Run,
    RunStatus,
};

/// A blackboard that redacts everything written through it (see the module docs).
#[derive(Debug, Clone)]
pub struct RedactingBlackboard {
    inner: Arc<dyn Blackboard>,
    redactor: Arc<Redactor>,
}

impl RedactingBlackboard {
    /// `inner`, with everything written to it redacted by `redactor`.
    pub fn new(inner: Arc<dyn Blackboard>, redactor: Redactor) -> Self {
        RedactingBlackboard {
            inner,
            redactor: Arc::new(redactor),
        }
    }

    /// `inner` wrapped as a shared handle: what every front end that writes should open.
    pub fn wrap(inner: Arc<dyn Blackboard>, redactor: Redactor) -> Arc<dyn Blackboard> {
        Arc::new(Self::new(inner, redactor))
    }

    /// The redactor it writes through.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn text(&self, text: &mut String) {
        if let Cow::Owned(redacted) = self.redactor.redact(text) {
            *text = redacted;
        }
    }

    /// The event's payload redacted: a typed one is encoded to its text, which one scan clears in the common
    /// case ([`Redactor::may_redact_json`]); any other, or one it cannot clear, is redacted string by string.
    fn event(&self, mut event: NewEvent) -> NewEvent {
        event.payload = event.payload.encoded();
        let clear = event
            .payload
            .encoded_text()
            .is_some_and(|text| !self.redactor.may_redact_json(text.as_bytes()));
        if !clear {
            event.payload.edit_json(|value| self.redactor.redact_json(value));
        }
        event
    }

    fn run(&self, mut run: NewRun) -> NewRun {
        self.text(&mut run.goal);
        self.text(&mut run.repo);
        self.redactor.redact_json(&mut run.config);
        self.redactor.redact_json(&mut run.budgets);
        run
    }

    fn brief(&self, brief: &Brief) -> Brief {
        let mut brief = brief.clone();
        self.text(&mut brief.title);
        self.text(&mut brief.goal_anchor);
        self.text(&mut brief.instructions);
        brief
    }

    fn gate(&self, mut gate: NewGate) -> NewGate {
        self.redactor.redact_json(&mut gate.summary);
        gate
    }

    fn decision(&self, decision: GateDecision) -> GateDecision {
        match decision {
            GateDecision::Approve { by, note } => GateDecision::Approve {
                by,
                note: note.map(|n| self.redactor.redact(&n).into_owned()),
            },
            GateDecision::Reject { by, reason } => GateDecision::Reject {
                by,
                reason: self.redactor.redact(&reason).into_owned(),
            },
        }
    }

    /// The artifact's content redacted: JSON string by string (a secret holding a quote or a backslash is
    /// escaped in the text, so a text pass alone could miss it), then as text or bytes. Most artifacts
    /// hold nothing to redact, which one scan of their bytes tells ([`Redactor::may_redact_json`]) without
    /// parsing them.
    fn artifact(&self, mut artifact: NewArtifact) -> NewArtifact {
        if !self.redactor.may_redact_json(&artifact.bytes) {
            return artifact;
        }
        if let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&artifact.bytes)
            && self.redactor.redact_json(&mut value)
            && let Ok(bytes) = serde_json::to_vec(&value)
        {
            artifact.bytes = bytes;
        }
        if let Cow::Owned(bytes) = self.redactor.redact_bytes(&artifact.bytes) {
            artifact.bytes = bytes;
        }
        artifact
    }

    fn batch(&self, batch: WriteBatch) -> WriteBatch {
        let mut out = WriteBatch::new();
        for change in batch.into_changes() {
            out.push(match change {
                Change::InsertBrief(brief) => Change::InsertBrief(Box::new(self.brief(&brief))),
                Change::MoveBrief { id, from, to, event } => Change::MoveBrief {
                    id,
                    from,
                    to,
                    event: self.event(event),
                },
                Change::MoveTeachback { id, from, to, event } => Change::MoveTeachback {
                    id,
                    from,
                    to,
                    event: self.event(event),
                },
                unchanged
                @ (Change::SetWorkspace { .. } | Change::HoldsClaim(_) | Change::GaveUpClaim(_)) => unchanged,
                Change::PutArtifact(artifact) => Change::PutArtifact(self.artifact(artifact)),
                Change::AppendEvent(event) => Change::AppendEvent(self.event(event)),
            });
        }
        out
    }
}

impl Blackboard for RedactingBlackboard {
    fn create_run(&self, run: NewRun) -> Result<Run> {
        self.inner.create_run(self.run(run))
    }

    fn get_run(&self, id: RunId) -> Result<Run> {
        self.inner.get_run(id)
    }

    fn run_status(&self, id: RunId) -> Result<RunStatus> {
        self.inner.run_status(id)
    }

    fn list_runs(&self) -> Result<Vec<Run>> {
        self.inner.list_runs()
    }

    fn resolve_run(&self, typed: &str) -> Result<RunId> {
        self.inner.resolve_run(typed)
    }

    fn set_run_status(&self, id: RunId, expected: Option<RunStatus>, to: RunStatus) -> Result<Run> {
        self.inner.set_run_status(id, expected, to)
    }

    fn lock_driver(&self, run: RunId, holder: &str) -> Result<DriverLease> {
        self.inner.lock_driver(run, holder)
    }

    fn append_event(&self, event: NewEvent) -> Result<Event> {
        self.inner.append_event(self.event(event))
    }

    fn append_event_soon(&self, event: NewEvent) -> Result<()> {
        self.inner.append_event_soon(self.event(event))
    }

    fn append_event_holding(&self, fence: &Fence, event: NewEvent) -> Result<Event> {
        self.inner.append_event_holding(fence, self.event(event))
    }

    fn apply_soon(&self, batch: WriteBatch) -> Result<()> {
        self.inner.apply_soon(self.batch(batch))
    }

    fn flush_events(&self) -> Result<()> {
        self.inner.flush_events()
    }

    fn events_after(&self, run: Option<RunId>, after_seq: i64, limit: usize) -> Result<Vec<Event>> {
        self.inner.events_after(run, after_seq, limit)
    }

    fn events_of_kinds_after(
        &self,
        run: RunId,
        kinds: &[EventKind],
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        self.inner.events_of_kinds_after(run, kinds, after_seq, limit)
    }

    fn last_seq(&self, run: Option<RunId>) -> Result<i64> {
        self.inner.last_seq(run)
    }

    fn briefs_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<BriefId>> {
        self.inner.briefs_in_events_after(run, after_seq)
    }

    fn workstreams_in_events_after(&self, run: RunId, after_seq: i64) -> Result<Vec<String>> {
        self.inner.workstreams_in_events_after(run, after_seq)
    }

    fn insert_brief(&self, brief: &Brief) -> Result<()> {
        self.inner.insert_brief(&self.brief(brief))
    }

    fn insert_briefs(&self, briefs: &[Brief]) -> Result<()> {
        let briefs: Vec<Brief> = briefs.iter().map(|b| self.brief(b)).collect();
        self.inner.insert_briefs(&briefs)
    }

    fn get_brief(&self, id: BriefId) -> Result<Brief> {
        self.inner.get_brief(id)
    }

    fn brief_status(&self, id: BriefId) -> Result<BriefStatus> {
        self.inner.brief_status(id)
    }

    fn resolve_brief(&self, typed: &str) -> Result<BriefId> {
        self.inner.resolve_brief(typed)
    }

    fn list_briefs(&self, run: RunId) -> Result<Vec<Brief>> {
        self.inner.list_briefs(run)
    }

    fn list_briefs_by_status(&self, run: RunId, status: BriefStatus) -> Result<Vec<Brief>> {
        self.inner.list_briefs_by_status(run, status)
    }

    fn list_children(&self, parent: BriefId) -> Result<Vec<Brief>> {
        self.inner.list_children(parent)
    }

    fn list_children_states(&self, parent: BriefId) -> Result<Vec<BriefState>> {
        self.inner.list_children_states(parent)
    }

    fn list_workstream_briefs(&self, run: RunId, workstream: &str) -> Result<Vec<Brief>> {
        self.inner.list_workstream_briefs(run, workstream)
    }

    fn count_briefs(
        &self,
        run: RunId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.inner.count_briefs(run, workstream, tier, statuses)
    }

    fn count_children(
        &self,
        parent: BriefId,
        workstream: &str,
        tier: Option<Tier>,
        statuses: &[BriefStatus],
    ) -> Result<u64> {
        self.inner.count_children(parent, workstream, tier, statuses)
    }

    fn update_brief_status(
        &self,
        id: BriefId,
        from: BriefStatus,
        to: BriefStatus,
        event: NewEvent,
    ) -> Result<Brief> {
        self.inner.update_brief_status(id, from, to, self.event(event))
    }

    fn set_teachback_state(
        &self,
        id: BriefId,
        expected: TeachbackState,
        new: TeachbackState,
        event: NewEvent,
    ) -> Result<Brief> {
        self.inner
            .set_teachback_state(id, expected, new, self.event(event))
    }

    fn set_brief_workspace(
        &self,
        id: BriefId,
        branch: Option<&str>,
        worktree: Option<&str>,
    ) -> Result<Brief> {
        self.inner.set_brief_workspace(id, branch, worktree)
    }

    fn claim_next_brief(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
    ) -> Result<Option<Brief>> {
        self.inner.claim_next_brief(run, claimer, lease)
    }

    fn claim_offered(
        &self,
        run: Option<RunId>,
        claimer: &str,
        lease: chrono::Duration,
        limit: usize,
        offer: &agency_core::placement::Offer,
    ) -> Result<Vec<Claimed>> {
        self.inner.claim_offered(run, claimer, lease, limit, offer)
    }

    fn set_label_needs(&self, run: RunId, needs: &[agency_core::placement::LabelNeed]) -> Result<()> {
        self.inner.set_label_needs(run, needs)
    }

    fn label_needs(&self, run: RunId) -> Result<Vec<agency_core::placement::LabelNeed>> {
        self.inner.label_needs(run)
    }

    fn record_offer(&self, run: RunId, runner: &str, offer: &agency_core::placement::Offer) -> Result<()> {
        self.inner.record_offer(run, runner, offer)
    }

    fn forget_offer(&self, run: RunId, runner: &str) -> Result<()> {
        self.inner.forget_offer(run, runner)
    }

    fn runner_offers(&self, run: RunId) -> Result<Vec<agency_core::placement::RunnerOffer>> {
        self.inner.runner_offers(run)
    }

    fn claim_of(&self, id: BriefId) -> Result<Option<Claim>> {
        self.inner.claim_of(id)
    }

    fn renew_claim(&self, id: BriefId, claimer: &str, lease: chrono::Duration) -> Result<Brief> {
        self.inner.renew_claim(id, claimer, lease)
    }

    fn reclaim_expired(&self, run: Option<RunId>, now: DateTime<Utc>) -> Result<Vec<Brief>> {
        self.inner.reclaim_expired(run, now)
    }

    fn apply(&self, batch: WriteBatch) -> Result<()> {
        self.inner.apply(self.batch(batch))
    }

    fn bind_session(&self, session: &str, agent: Option<&str>, brief: BriefId) -> Result<()> {
        self.inner.bind_session(session, agent, brief)
    }

    fn session_brief(&self, session: &str, agent: Option<&str>) -> Result<Option<BriefId>> {
        self.inner.session_brief(session, agent)
    }

    fn bind_task(&self, session: &str, task: &str, brief: BriefId) -> Result<()> {
        self.inner.bind_task(session, task, brief)
    }

    fn task_brief(&self, session: &str, task: &str) -> Result<Option<BriefId>> {
        self.inner.task_brief(session, task)
    }

    fn session_tasks(&self, session: &str) -> Result<Vec<(String, BriefId)>> {
        self.inner.session_tasks(session)
    }

    fn open_gate(&self, gate: NewGate) -> Result<Gate> {
        self.inner.open_gate(self.gate(gate))
    }

    fn open_gate_holding(&self, fence: &Fence, gate: NewGate) -> Result<Gate> {
        self.inner.open_gate_holding(fence, self.gate(gate))
    }

    fn get_gate(&self, id: GateId) -> Result<Gate> {
        self.inner.get_gate(id)
    }

    fn resolve_gate(&self, typed: &str) -> Result<GateId> {
        self.inner.resolve_gate(typed)
    }

    fn pending_gates(&self, run: Option<RunId>) -> Result<Vec<Gate>> {
        self.inner.pending_gates(run)
    }

    fn list_gates(&self, run: RunId) -> Result<Vec<Gate>> {
        self.inner.list_gates(run)
    }

    fn list_gates_of_kind(&self, run: RunId, kind: GateKind) -> Result<Vec<Gate>> {
        self.inner.list_gates_of_kind(run, kind)
    }

    fn decide_gate(&self, id: GateId, decision: GateDecision) -> Result<Gate> {
        self.inner.decide_gate(id, self.decision(decision))
    }

    fn decide_pending_gate(&self, run: RunId, decision: GateDecision) -> Result<Gate> {
        self.inner.decide_pending_gate(run, self.decision(decision))
    }

    fn put_artifact(&self, artifact: NewArtifact) -> Result<ArtifactMeta> {
        self.inner.put_artifact(self.artifact(artifact))
    }

    fn get_artifact(&self, id: ArtifactId) -> Result<Artifact> {
        self.inner.get_artifact(id)
    }

    fn latest_artifact(&self, run: RunId, name: &str) -> Result<Option<Artifact>> {
        self.inner.latest_artifact(run, name)
    }

    fn list_artifacts(&self, run: RunId, brief: Option<BriefId>) -> Result<Vec<ArtifactMeta>> {
        self.inner.list_artifacts(run, brief)
    }
}

#[cfg(test)]
mod tests {
    use agency_core::event::EventPayload;
    use serde_json::json;

    use super::*;
    use crate::SqliteBlackboard;
    use crate::conformance::sample_brief;

    const KEY: &str = "sk-ant-api03-Zq81kLmX0pQrS7tUvWx";
    const TOKEN: &str = "mst-4f9a21c0de77";

    fn redacting() -> (Arc<dyn Blackboard>, Arc<dyn Blackboard>) {
        let raw: Arc<dyn Blackboard> = Arc::new(SqliteBlackboard::open_in_memory().unwrap());
        let redactor = Redactor::from_env(
            [
                ("ANTHROPIC_API_KEY".to_string(), KEY.to_string()),
                ("MY_SERVICE_TOKEN".to_string(), TOKEN.to_string()),
            ],
            &[],
        );
        (RedactingBlackboard::wrap(raw.clone(), redactor), raw)
    }

    /// Everything the raw store holds for `run`, as one text to search.
    fn everything(raw: &dyn Blackboard, run: RunId) -> String {
        let mut all = format!("{:?}", raw.get_run(run).unwrap());
        all.push_str(&format!("{:?}", raw.events_after(Some(run), 0, 10_000).unwrap()));
        all.push_str(&format!("{:?}", raw.list_briefs(run).unwrap()));
        all.push_str(&format!("{:?}", raw.list_gates(run).unwrap()));
        for meta in raw.list_artifacts(run, None).unwrap() {
            let artifact = raw.get_artifact(meta.id).unwrap();
            all.push_str(&String::from_utf8_lossy(&artifact.bytes));
        }
        all
    }

    #[test]
    fn every_write_is_redacted_whoever_makes_it() {
        let (store, raw) = redacting();
        let leak = format!("key {KEY} token {TOKEN}");
        let run = store.create_run(NewRun::new(leak.clone(), "/repo")).unwrap();
        store
            .append_event(NewEvent::new(
                run.id,
                EventKind::Log,
                json!({ "message": leak, "nested": [leak] }),
            ))
            .unwrap();
        store
            .append_event_soon(NewEvent::new(run.id, EventKind::Log, json!({ "message": leak })))
            .unwrap();
        // Typed payloads are encoded to text before they are looked at: the secret is found in the text.
        store
            .append_event(NewEvent::log(run.id, "info", leak.clone()))
            .unwrap();
        store
            .append_event_soon(NewEvent::log(run.id, "info", format!("q\"{KEY}\\")))
            .unwrap();
        store.flush_events().unwrap();
        let mut brief = sample_brief(run.id, &leak);
        brief.goal_anchor = leak.clone();
        store.insert_brief(&brief).unwrap();
        store
            .put_artifact(NewArtifact::new(
                run.id,
                "report/x",
                "text/plain",
                leak.as_bytes().to_vec(),
            ))
            .unwrap();
        let json_artifact = serde_json::to_vec(&json!({ "summary": format!("q\"{KEY}") })).unwrap();
        let mut batch = WriteBatch::new();
        batch
            .put_artifact(NewArtifact::new(
                run.id,
                "output/x",
                "application/json",
                json_artifact,
            ))
            .append_event(NewEvent::new(run.id, EventKind::Log, json!({ "message": leak })))
            .move_brief(
                brief.id,
                BriefStatus::Pending,
                BriefStatus::Running,
                NewEvent::new(run.id, EventKind::BriefStatus, json!({ "note": leak })),
            );
        store.apply(batch).unwrap();
        let gate = store
            .open_gate(NewGate::new(run.id, GateKind::T1Plan, json!({ "message": leak })))
            .unwrap();
        store
            .decide_gate(
                gate.id,
                GateDecision::Approve {
                    by: "human".into(),
                    note: Some(leak.clone()),
                },
            )
            .unwrap();

        let all = everything(raw.as_ref(), run.id);
        assert!(!all.contains(KEY) && !all.contains(TOKEN), "{all}");
        assert!(all.contains("[redacted:ANTHROPIC_API_KEY]"), "{all}");
        assert!(all.contains("[redacted:MY_SERVICE_TOKEN]"), "{all}");
        // The JSON artifact is still JSON.
        let output = raw.latest_artifact(run.id, "output/x").unwrap().unwrap();
        let value: serde_json::Value = serde_json::from_slice(&output.bytes).unwrap();
        assert_eq!(value["summary"], "q\"[redacted:ANTHROPIC_API_KEY]");
    }

    #[test]
    fn what_is_not_secret_is_written_as_given() {
        let (store, raw) = redacting();
        let run = store.create_run(NewRun::new("fix the bug", "/repo")).unwrap();
        let bytes = vec![0u8, 159, 146, 150, b'x'];
        store
            .put_artifact(NewArtifact::new(
                run.id,
                "diff/x",
                "application/octet-stream",
                bytes.clone(),
            ))
            .unwrap();
        assert_eq!(
            raw.latest_artifact(run.id, "diff/x").unwrap().unwrap().bytes,
            bytes
        );
        assert_eq!(raw.get_run(run.id).unwrap().goal, "fix the bug");
        let line = NewEvent::log(run.id, "info", "all \"good\"\n");
        let written = store.append_event(line.clone()).unwrap();
        assert_eq!(written.payload, line.payload.to_value());
        let read = raw.events_after(Some(run.id), written.seq - 1, 1).unwrap();
        assert_eq!(read[0].payload, line.payload.to_value());
        assert!(matches!(read[0].typed(), Ok(EventPayload::Log(_))));
    }
}
