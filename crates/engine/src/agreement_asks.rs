//! The questions agreement verification still has to put to a handing-over tier ([`crate::agreement`]):
//! queued as significant mismatches are found, and found again on the blackboard after a runner stopped
//! between recording a question and its answer. Kept apart from `agreement.rs` so the runner's state can
//! hold them without importing the checks (which import the runner).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use agency_core::BriefId;
use agency_core::RunId;
use agency_core::event::payload::AgreementChecked;
use agency_core::event::{EventKind, EventPayload};
use agency_store::Blackboard;

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
}

impl Asks {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, AsksState>> {
        self.state
            .lock()
            .map_err(|_| EngineError::State("agreement questions poisoned".into()))
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

/// The events read per page when looking for unanswered questions.
const PAGE: usize = 500;

/// The `asking` records of `run` with no answer recorded after them for the same brief and handoff.
fn unanswered(store: &dyn Blackboard, run: RunId) -> Result<Vec<Ask>> {
    let mut open: Vec<Ask> = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_of_kinds_after(run, &[EventKind::Agreement], after, PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in &page {
            let (Ok(EventPayload::Agreement(check)), Some(receiver)) = (event.typed(), event.brief) else {
                continue;
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
        }
    }
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
