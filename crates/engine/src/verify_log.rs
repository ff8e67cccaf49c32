//! The stage-1 verify records (`signoff_verify` events) of a run's log, as far as the runner has read them:
//! which commits each brief's verify results were recorded for. Kept because, through a remote, every
//! slice a worker reports asks whether the worker verified that very commit; reading the run's log from the
//! start for each one grew with the run (and stopped at the read's cap). A leaf of the engine: the engine
//! holds it, [`crate::handover`] asks it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use agency_core::event::{EventKind, EventPayload};
use agency_core::{BriefId, RunId};
use agency_store::Blackboard;
use agency_store::walk::each_event_of_kinds;

use crate::error::{EngineError, Result};

/// Per run: the verify records read so far.
#[derive(Debug, Default)]
pub(crate) struct VerifyLog {
    runs: Mutex<HashMap<RunId, Seen>>,
}

#[derive(Debug, Default)]
struct Seen {
    /// The seq of the last event read.
    after: i64,
    /// Per brief, each record's commit and the id of the artifact that holds its result.
    records: HashMap<BriefId, Vec<(String, String)>>,
}

impl VerifyLog {
    /// Whether a `signoff_verify` event of `brief` names commit `rev` and the result artifact `artifact`.
    /// Reads only what was logged since the last question about the run.
    pub(crate) fn names(
        &self,
        store: &dyn Blackboard,
        run: RunId,
        brief: BriefId,
        rev: &str,
        artifact: &str,
    ) -> Result<bool> {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let seen = runs.entry(run).or_default();
        let records = &mut seen.records;
        seen.after = each_event_of_kinds::<EngineError>(
            store,
            run,
            &[EventKind::SignoffVerify],
            seen.after,
            |event| {
                if let (Some(of), Ok(EventPayload::SignoffVerify(verify))) = (event.brief, event.typed())
                    && let Some(artifact) = verify.artifact
                {
                    records.entry(of).or_default().push((verify.rev, artifact));
                }
                Ok(())
            },
        )?;
        Ok(seen
            .records
            .get(&brief)
            .is_some_and(|records| records.iter().any(|(r, a)| r == rev && a == artifact)))
    }
}

#[cfg(test)]
mod tests {
    use agency_core::event::NewEvent;
    use agency_core::event::payload::SignoffVerify;
    use agency_store::conformance::sample_brief;
    use agency_store::walk::PAGE;
    use agency_store::{NewRun, SqliteBlackboard};

    use super::*;

    fn record(store: &SqliteBlackboard, run: RunId, brief: BriefId, rev: &str, artifact: &str) {
        let verify = SignoffVerify {
            rev: rev.into(),
            artifact: Some(artifact.into()),
            ..SignoffVerify::default()
        };
        store
            .append_event(NewEvent::typed(run, EventPayload::SignoffVerify(verify)).brief(brief))
            .unwrap();
    }

    /// More records than one read pages through, asked about before and after more are logged: each answer
    /// matches brief, commit and artifact, and records logged after a question are found by the next.
    #[test]
    fn a_record_is_found_by_brief_commit_and_artifact_across_pages_and_later_writes() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let (a, b) = (sample_brief(run, "a"), sample_brief(run, "b"));
        for brief in [&a, &b] {
            store.insert_brief(brief).unwrap();
        }
        for n in 0..PAGE + 20 {
            record(&store, run, a.id, &format!("rev-{n}"), &format!("art-{n}"));
        }
        let log = VerifyLog::default();
        let last = PAGE + 19;
        assert!(
            log.names(&store, run, a.id, &format!("rev-{last}"), &format!("art-{last}"))
                .unwrap()
        );
        assert!(log.names(&store, run, a.id, "rev-0", "art-0").unwrap());
        // The same commit with another artifact, or another brief's, is not it.
        assert!(!log.names(&store, run, a.id, "rev-0", "art-1").unwrap());
        assert!(!log.names(&store, run, b.id, "rev-0", "art-0").unwrap());
        record(&store, run, b.id, "rev-b", "art-b");
        assert!(log.names(&store, run, b.id, "rev-b", "art-b").unwrap());
    }
}
