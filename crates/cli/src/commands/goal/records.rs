//! Sign-off records for a plan file outside any runner-owned run. Each plan file gets one *goals run* on the
//! blackboard (its config says `{"goals_plan": "<path>"}`); every `agency goal complete` writes its
//! `signoff_*` events and artifacts there. A `signoff_accepted` event naming a goal is that goal's sign-off
//! record: a goal whose status is `done` without one was ticked by hand and is shown as *unsigned*.

use std::collections::BTreeMap;
use std::path::Path;

use agency_core::event::EventPayload;
use agency_core::goals::{Goal, GoalStatus, PlanDoc};
use agency_core::{Event, EventKind, RunId};
use agency_store::{Blackboard, NewRun, RunStatus, SqliteBlackboard};
use serde_json::json;

use super::plan_file::PlanFile;
use crate::error::CommandResult;
use crate::workspace::BlackboardAt;

/// The last sign-off attempt for a goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastSignoff {
    /// `accepted`, `rejected` or `inconclusive`.
    pub outcome: &'static str,
    /// The commit it reviewed.
    pub commit: String,
    /// Missing items of a rejection, or the reason of an inconclusive judge.
    pub details: Vec<String>,
}

/// The sign-off state of a goal as lists show it.
pub fn signoff_label(status_done: bool, last: Option<&LastSignoff>, signed: bool) -> String {
    match (status_done, last) {
        (true, _) if signed => "signed off".into(),
        (true, Some(last)) if last.outcome == "inconclusive" => "INCONCLUSIVE".into(),
        (true, _) => "UNSIGNED".into(),
        (false, Some(last)) => format!("last sign-off {}", last.outcome),
        (false, None) => String::new(),
    }
}

/// What the blackboard knows about a plan's goals.
#[derive(Debug, Default)]
pub struct Records {
    /// Goals with a `signoff_accepted` record.
    pub signed: std::collections::BTreeSet<String>,
    /// Each goal's latest sign-off outcome.
    pub last: BTreeMap<String, LastSignoff>,
    /// Sign-off records this build cannot read: not counted (a goal one would have signed stays unsigned),
    /// and said on stderr when read.
    pub unreadable: Vec<String>,
}

impl Records {
    /// Reads the records for `plan` from the blackboard at `db`, if there is one; none otherwise (every
    /// done goal is then unsigned, which is the truth: nothing was recorded).
    pub fn read(db: &Path, plan: &PlanFile) -> CommandResult<Records> {
        let Ok(store) = SqliteBlackboard::open_read_only(db) else {
            return Ok(Records::default());
        };
        Records::from_store(&store, plan)
    }

    /// [`read`](Self::read) for either backend: a PostgreSQL blackboard is opened (and must be reachable).
    pub fn at(db: &BlackboardAt, plan: &PlanFile) -> CommandResult<Records> {
        match db {
            BlackboardAt::Sqlite(path) => Records::read(path, plan),
            BlackboardAt::Postgres(_) => Records::from_store(&*db.open()?, plan),
        }
    }

    fn from_store(store: &dyn Blackboard, plan: &PlanFile) -> CommandResult<Records> {
        let Some(run) = find_goals_run(store, plan)? else {
            return Ok(Records::default());
        };
        let mut records = Records::default();
        for event in all_events(store, run)? {
            records.add(&event);
        }
        for what in &records.unreadable {
            eprintln!(
                "warning: a sign-off record of {} does not read, so it is not counted: {what}",
                plan.relative()
            );
        }
        Ok(records)
    }

    fn add(&mut self, event: &Event) {
        if !matches!(
            event.kind,
            EventKind::SignoffAccepted | EventKind::SignoffRejected | EventKind::SignoffInconclusive
        ) {
            return;
        }
        let (outcome, record, details) = match event.typed() {
            Ok(EventPayload::SignoffAccepted(record)) => ("accepted", record, Vec::new()),
            Ok(EventPayload::SignoffRejected(record)) => {
                let missing = record.missing.clone().unwrap_or_default();
                ("rejected", record, missing)
            }
            Ok(EventPayload::SignoffInconclusive(record)) => {
                let reason = record.reason.clone().into_iter().collect();
                ("inconclusive", record, reason)
            }
            // Counted as nothing (a goal it would have signed stays unsigned), and said.
            Ok(_) | Err(_) => {
                let why = event
                    .typed()
                    .err()
                    .map_or_else(|| "not a sign-off outcome".to_string(), |e| e.to_string());
                self.unreadable
                    .push(format!("event {} ({}): {why}", event.seq, event.kind));
                return;
            }
        };
        if record.subject.is_empty() {
            return;
        }
        if outcome == "accepted" {
            self.signed.insert(record.subject.clone());
        }
        self.last.insert(
            record.subject,
            LastSignoff {
                outcome,
                commit: record.commit,
                details,
            },
        );
    }
}

fn all_events(store: &dyn Blackboard, run: RunId) -> CommandResult<Vec<Event>> {
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(Some(run), after, 500)?;
        let Some(last) = page.last() else {
            return Ok(events);
        };
        after = last.seq;
        events.extend(page);
    }
}

/// The goals run of `plan`, if one was made.
pub fn find_goals_run(store: &dyn Blackboard, plan: &PlanFile) -> CommandResult<Option<RunId>> {
    let repo = plan.root.display().to_string();
    let wanted = plan.relative();
    let runs = store.list_runs()?;
    Ok(runs
        .into_iter()
        .find(|r| r.repo == repo && r.config["goals_plan"].as_str() == Some(wanted.as_str()))
        .map(|r| r.id))
}

/// The goals run of `plan`, made (and set running) on first use.
pub fn goals_run(store: &dyn Blackboard, plan: &PlanFile) -> CommandResult<RunId> {
    if let Some(run) = find_goals_run(store, plan)? {
        return Ok(run);
    }
    let mut new = NewRun::new(
        format!("goals in {}", plan.relative()),
        plan.root.display().to_string(),
    );
    new.config = json!({ "goals_plan": plan.relative() });
    let run = store.create_run(new)?;
    store.set_run_status(run.id, Some(RunStatus::Planning), RunStatus::Running)?;
    Ok(run.id)
}

/// Goals that keep a session from stopping: active ones, and done ones with no sign-off record.
pub(super) fn open_goals<'d>(doc: &'d PlanDoc, records: &Records) -> Vec<&'d Goal> {
    doc.goals()
        .iter()
        .filter(|g| {
            let signed = g.id.as_deref().is_some_and(|id| records.signed.contains(id));
            match g.status {
                Some(GoalStatus::Active) => true,
                Some(GoalStatus::Done) => !signed,
                _ => false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use agency_core::NewEvent;
    use serde_json::json;

    use super::*;

    fn event(seq: i64, kind: EventKind, payload: serde_json::Value) -> Event {
        let new = NewEvent::new(RunId::new(), kind, payload);
        Event {
            seq,
            run: new.run,
            ts: new.ts,
            brief: None,
            tier: None,
            kind,
            payload: new.payload.into_value(),
        }
    }

    #[test]
    fn outcomes_are_read_typed_and_an_unreadable_one_signs_nothing() {
        let mut records = Records::default();
        records.add(&event(
            1,
            EventKind::SignoffRejected,
            json!({ "subject": "g1", "commit": "c1", "outcome": "rejected", "by": "judge", "missing": ["a test"] }),
        ));
        records.add(&event(
            2,
            EventKind::SignoffAccepted,
            json!({ "subject": "g2", "commit": "c2", "outcome": "accepted" }),
        ));
        // An acceptance whose commit is not a string: it must not sign g3.
        records.add(&event(
            3,
            EventKind::SignoffAccepted,
            json!({ "subject": "g3", "commit": 7, "outcome": "accepted" }),
        ));
        assert_eq!(
            records.last.get("g1"),
            Some(&LastSignoff {
                outcome: "rejected",
                commit: "c1".into(),
                details: vec!["a test".into()],
            })
        );
        assert!(records.signed.contains("g2"));
        assert!(!records.signed.contains("g3"));
        assert_eq!(records.unreadable.len(), 1);
        assert!(
            records.unreadable[0]
                .starts_with("event 3 (signoff_accepted): the payload of a signoff_accepted"),
            "{:?}",
            records.unreadable
        );
    }
}
