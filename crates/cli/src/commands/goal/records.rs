//! Sign-off records for a plan file outside any runner-owned run. Each plan file gets one *goals run* on the
//! blackboard (its config says `{"goals_plan": "<path>"}`); every `agency goal complete` writes its
//! `signoff_*` events and artifacts there. A `signoff_accepted` event naming a goal is that goal's sign-off
//! record: a goal whose status is `done` without one was ticked by hand and is shown as *unsigned*.

use std::collections::BTreeMap;
use std::path::Path;

use agency_core::{Event, EventKind, RunId};
use agency_store::{Blackboard, NewRun, RunStatus, SqliteBlackboard};
use serde_json::{Value, json};

use super::plan_file::PlanFile;
use crate::commands::store_error;
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
            BlackboardAt::Postgres(_) => Records::from_store(&*db.open().map_err(store_error)?, plan),
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
        Ok(records)
    }

    fn add(&mut self, event: &Event) {
        let outcome = match event.kind {
            EventKind::SignoffAccepted => "accepted",
            EventKind::SignoffRejected => "rejected",
            EventKind::SignoffInconclusive => "inconclusive",
            _ => return,
        };
        let Some(subject) = event.payload["subject"].as_str() else {
            return;
        };
        if outcome == "accepted" {
            self.signed.insert(subject.to_string());
        }
        let details = match outcome {
            "rejected" => event.payload["missing"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            "inconclusive" => event.payload["reason"]
                .as_str()
                .map(str::to_string)
                .into_iter()
                .collect(),
            _ => Vec::new(),
        };
        self.last.insert(
            subject.to_string(),
            LastSignoff {
                outcome,
                commit: event.payload["commit"].as_str().unwrap_or_default().to_string(),
                details,
            },
        );
    }
}

fn all_events(store: &dyn Blackboard, run: RunId) -> CommandResult<Vec<Event>> {
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(Some(run), after, 500).map_err(store_error)?;
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
    let runs = store.list_runs().map_err(store_error)?;
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
    let run = store.create_run(new).map_err(store_error)?;
    store
        .set_run_status(run.id, Some(RunStatus::Planning), RunStatus::Running)
        .map_err(store_error)?;
    Ok(run.id)
}
