//! The questions agreement verification still has to put to a handing-over tier ([`crate::agreement`]):
//! queued as significant mismatches are found, and found again on the blackboard after a runner stopped
//! between recording a question and its answer. Also the implementers' teachbacks decided since the last
//! pass ([`Asks::decided_teachbacks`]), whose restatements the T3→T4 check reads — each once, across a
//! restart too — and what each squad's draft declared ([`Asks::handed`]), which the T3→T4 and T4→T5
//! checks compare them with. Kept apart from `agreement.rs` so the runner's state can hold them without importing the
//! checks (which import the runner).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use agency_core::event::payload::AgreementChecked;
use agency_core::event::{EventKind, EventPayload};
use agency_core::teachback::{Teachback, TeachbackState};
use agency_core::{BriefId, RunId};
use agency_store::Blackboard;
use agency_store::walk::each_event_of_kinds;

use crate::error::{EngineError, Result};

/// The `confirmation` of a significant mismatch's first record, before its question is answered.
pub(crate) const ASKING: &str = "asking";

/// A significant mismatch whose question is not answered yet.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    pub(crate) run: RunId,
    /// The receiving brief, on which the records are written.
    pub(crate) receiver: BriefId,
    /// The `asking` record.
    pub(crate) check: AgreementChecked,
}

/// The questions a runner still has to ask, and the runs whose recorded ones it has looked for since it
/// started (once per run, so questions a stopped runner left unasked are asked by the next).
#[derive(Debug, Clone, Default)]
pub(crate) struct Asks {
    state: Arc<Mutex<AsksState>>,
}

#[derive(Debug, Default)]
struct AsksState {
    queued: Vec<Ask>,
    scanned: HashSet<RunId>,
    teachbacks: HashMap<RunId, Teachbacks>,
    /// What each squad handed its implementers ([`Handed`]), by squad brief: a squad's draft is read once
    /// for all its implementers, not once per pass that decided one of them.
    handed: HashMap<BriefId, Arc<Handed>>,
}

/// What a squad's draft declared for the T3→T4 check: the files it touches and the interfaces it provides
/// and consumes (both empty when the parent is no T3 squad). A squad's draft is its output, written once
/// when it finished, so this never goes stale.
#[derive(Debug, Default)]
pub(crate) struct Handed {
    pub(crate) files: Vec<String>,
    pub(crate) interfaces: Vec<String>,
}

impl Handed {
    /// How many squads' declarations are kept; past it they are forgotten all at once (and read again as
    /// needed), so memory stays flat however many squads a run has.
    const KEPT: usize = 256;
}

/// How far a run's teachback records have been read for the T3→T4 check.
#[derive(Debug, Default)]
struct Teachbacks {
    /// Where the next read starts: the run's last event when this one was read.
    after: i64,
    /// The latest teachback each brief submitted that is not decided yet (its review still to come).
    submitted: HashMap<BriefId, Teachback>,
}

/// The `handoff` of an implementer's own restatement.
pub(crate) const TASK_HANDOFF: &str = "t3→t4";

impl Asks {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, AsksState>> {
        self.state
            .lock()
            .map_err(|_| EngineError::State("agreement questions poisoned".into()))
    }

    /// What `squad` handed its implementers: remembered, or read with `read` and remembered.
    pub(crate) fn handed(
        &self,
        squad: BriefId,
        read: impl FnOnce() -> Result<Handed>,
    ) -> Result<Arc<Handed>> {
        if let Some(handed) = self.lock()?.handed.get(&squad) {
            return Ok(handed.clone());
        }
        let handed = Arc::new(read()?);
        let mut state = self.lock()?;
        if state.handed.len() >= Handed::KEPT {
            state.handed.clear();
        }
        state.handed.insert(squad, handed.clone());
        Ok(handed)
    }

    pub(crate) fn queue(&self, ask: Ask) -> Result<()> {
        self.lock()?.queued.push(ask);
        Ok(())
    }

    /// The questions of `run` to ask now: those queued, and on the first call for the run, those recorded
    /// as `asking` without an answer (a runner that stopped between the two).
    pub(crate) fn take(&self, store: &dyn Blackboard, run: RunId) -> Result<Vec<Ask>> {
        let scan = !self.lock()?.scanned.contains(&run);
        let recorded = if scan { unanswered(store, run)? } else { Vec::new() };
        let mut state = self.lock()?;
        state.scanned.insert(run);
        let (mine, others): (Vec<Ask>, Vec<Ask>) = state.queued.drain(..).partition(|a| a.run == run);
        state.queued = others;
        let mut asks = recorded;
        for ask in mine {
            let same = |a: &Ask| a.receiver == ask.receiver && a.check.handoff == ask.check.handoff;
            if !asks.iter().any(same) {
                asks.push(ask);
            }
        }
        Ok(asks)
    }
}

impl Asks {
    /// The teachbacks of `run` decided (active: approved, or an advisory one recorded) since the last call,
    /// each with the brief it is of, in order. The first call for the run reads its records from the start
    /// and leaves out the briefs whose restatement an earlier runner already checked (an `agreement` record
    /// of [`TASK_HANDOFF`]); later calls read only what is new. A teachback record that does not parse is
    /// skipped: the hook and the runner validated it when it was submitted.
    pub(crate) fn decided_teachbacks(
        &self,
        store: &dyn Blackboard,
        run: RunId,
    ) -> Result<Vec<(BriefId, Teachback)>> {
        let (mut after, mut submitted, first) = {
            let mut state = self.lock()?;
            match state.teachbacks.remove(&run) {
                Some(seen) => (seen.after, seen.submitted, false),
                None => (0, HashMap::new(), true),
            }
        };
        let mut decided: Vec<(BriefId, Teachback)> = Vec::new();
        let kinds = [EventKind::TeachbackSubmitted, EventKind::TeachbackApproved];
        // Where the run's log stands before it is read: every event up to here is read now, so the next
        // call starts past it even when none of them was a teachback's. (The search walks the run's events
        // after `after` and keeps the teachbacks: a cursor left at the last teachback made every pass walk
        // all that happened since — 20% of the runner's CPU at 3,000 briefs, growing with the run.) An event
        // at or below it is already visible: the stores give `seq` in commit order.
        let through = store.last_seq(Some(run))?;
        after = each_event_of_kinds::<EngineError>(store, run, &kinds, after, |event| {
            let Some(brief) = event.brief else { return Ok(()) };
            match event.typed() {
                Ok(EventPayload::TeachbackSubmitted(sent)) => {
                    let Ok(teachback) = serde_json::from_value::<Teachback>(sent.teachback) else {
                        return Ok(());
                    };
                    if sent.to == Some(TeachbackState::Active) {
                        submitted.remove(&brief);
                        decided.push((brief, teachback));
                    } else {
                        submitted.insert(brief, teachback);
                    }
                }
                Ok(EventPayload::TeachbackApproved(_)) => {
                    if let Some(teachback) = submitted.remove(&brief) {
                        decided.push((brief, teachback));
                    }
                }
                _ => {}
            }
            Ok(())
        })?
        .max(through);
        if first && !decided.is_empty() {
            let checked = restatements_checked(store, run)?;
            decided.retain(|(brief, _)| !checked.contains(brief));
        }
        self.lock()?
            .teachbacks
            .insert(run, Teachbacks { after, submitted });
        Ok(decided)
    }
}

/// The briefs of `run` whose own restatement (T3→T4) has a record.
fn restatements_checked(store: &dyn Blackboard, run: RunId) -> Result<HashSet<BriefId>> {
    let mut checked = HashSet::new();
    each_event_of_kinds::<EngineError>(store, run, &[EventKind::Agreement], 0, |event| {
        if let (Ok(EventPayload::Agreement(check)), Some(brief)) = (event.typed(), event.brief)
            && check.handoff == TASK_HANDOFF
        {
            checked.insert(brief);
        }
        Ok(())
    })?;
    Ok(checked)
}

/// The `asking` records of `run` with no answer recorded after them for the same brief and handoff.
fn unanswered(store: &dyn Blackboard, run: RunId) -> Result<Vec<Ask>> {
    let mut open: Vec<Ask> = Vec::new();
    each_event_of_kinds::<EngineError>(store, run, &[EventKind::Agreement], 0, |event| {
        let (Ok(EventPayload::Agreement(check)), Some(receiver)) = (event.typed(), event.brief) else {
            return Ok(());
        };
        let same = |a: &Ask| a.receiver == receiver && a.check.handoff == check.handoff;
        match check.confirmation.as_deref() {
            // The same handoff checked again (a runner that stopped before acting on it): one question.
            Some(ASKING) => {
                open.retain(|a| !same(a));
                open.push(Ask { run, receiver, check });
            }
            Some(_) => open.retain(|a| !same(a)),
            None => {}
        }
        Ok(())
    })?;
    Ok(open)
}

#[cfg(test)]
mod tests {
    use agency_core::event::NewEvent;
    use agency_store::conformance::sample_brief;
    use agency_store::{NewRun, SqliteBlackboard};

    use super::*;

    fn checked(handoff: &str, confirmation: Option<&str>) -> EventPayload {
        EventPayload::Agreement(AgreementChecked {
            level: "L1".into(),
            handoff: handoff.into(),
            workstream: "ws".into(),
            outcome: "mismatch".into(),
            significant: true,
            differences: vec!["x is outside what was handed over".into()],
            confirmation: confirmation.map(str::to_owned),
            ..AgreementChecked::default()
        })
    }

    fn submitted(to: &str) -> (EventKind, serde_json::Value) {
        let teachback = serde_json::json!({
            "building": "b", "key_constraints": ["c"], "approach": "a", "most_likely_wrong": "m",
            "least_confident": "l", "files": ["add.sh"],
        });
        let value = serde_json::json!({"teachback": teachback, "from": "pending", "to": to});
        (EventKind::TeachbackSubmitted, value)
    }

    /// The implementers' decided teachbacks: an advisory one recorded active, a blocking one once approved
    /// (not while under review); each handed out once per runner, and a runner that starts on a run skips
    /// those whose restatement an earlier one already recorded.
    #[test]
    fn decided_teachbacks_are_handed_out_once_and_a_new_runner_skips_the_checked() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let (a, b, c) = (
            sample_brief(run, "a"),
            sample_brief(run, "b"),
            sample_brief(run, "c"),
        );
        for brief in [&a, &b, &c] {
            store.insert_brief(brief).unwrap();
        }
        let approved = (
            EventKind::TeachbackApproved,
            serde_json::json!({"reviewer": "t3/ws", "from": "under_review", "to": "active"}),
        );
        for (brief, (kind, value)) in [
            (a.id, submitted("active")),
            (b.id, submitted("under_review")),
            (c.id, submitted("under_review")),
            (b.id, approved),
        ] {
            store
                .append_event(NewEvent::new(run, kind, value).brief(brief))
                .unwrap();
        }
        let asks = Asks::default();
        let decided: Vec<BriefId> = asks
            .decided_teachbacks(&store, run)
            .unwrap()
            .into_iter()
            .map(|(id, teachback)| {
                assert_eq!(teachback.files, ["add.sh"]);
                id
            })
            .collect();
        assert_eq!(decided, [a.id, b.id]);
        assert!(asks.decided_teachbacks(&store, run).unwrap().is_empty());
        // A's restatement was recorded; a runner starting now hands out only B (C is still under review).
        let mut checked = checked(TASK_HANDOFF, None);
        if let EventPayload::Agreement(a) = &mut checked {
            a.outcome = "agreed".into();
        }
        store
            .append_event(NewEvent::typed(run, checked).brief(a.id))
            .unwrap();
        let restarted = Asks::default();
        let decided: Vec<BriefId> = restarted
            .decided_teachbacks(&store, run)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(decided, [b.id]);
    }

    /// A runner that stopped between a question's `asking` record and its answer leaves it to the next:
    /// the questions asked and not answered are found again (one per handoff, however often it was
    /// checked), the answered ones are not.
    #[test]
    fn questions_recorded_and_not_answered_are_found_again_once() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let (a, b) = (sample_brief(run, "a"), sample_brief(run, "b"));
        store.insert_brief(&a).unwrap();
        store.insert_brief(&b).unwrap();
        for (brief, payload) in [
            (a.id, checked("t4→t5", Some(ASKING))),
            (b.id, checked("t4→t5", Some(ASKING))),
            (b.id, checked("t4→t5", Some(ASKING))),
            (a.id, checked("t2→t3", None)),
            (a.id, checked("t4→t5", Some("corrected"))),
        ] {
            store
                .append_event(NewEvent::typed(run, payload).brief(brief))
                .unwrap();
        }
        let asks = Asks::default();
        let open = asks.take(&store, run).unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(
            (open[0].receiver, open[0].check.handoff.as_str()),
            (b.id, "t4→t5")
        );
        // Looked for once per run: what is left after is only what this runner queues.
        assert!(asks.take(&store, run).unwrap().is_empty());
    }
}
