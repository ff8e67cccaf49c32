//! The names of a brief's artifacts on the blackboard (its output, report, feedback and diff), and
//! reading them back, including those an earlier build named by a short id.

use agency_core::{Brief, BriefId, RunId};
use agency_store::{Blackboard, NewArtifact};

use crate::error::Result;

/// Text for a brief as a named artifact, to store.
pub(crate) fn text_artifact(brief: &Brief, name: &str, content_type: &str, text: &str) -> NewArtifact {
    NewArtifact::new(brief.run, name, content_type, text.as_bytes().to_vec()).brief(brief.id)
}

/// The artifact name of a brief's structured output.
pub fn output_name(brief: BriefId) -> String {
    brief_artifact_name("output", brief)
}

/// The artifact name of a brief's full report.
pub fn report_name(brief: BriefId) -> String {
    brief_artifact_name("report", brief)
}

/// The artifact name of the feedback a retried brief starts from.
pub fn feedback_name(brief: BriefId) -> String {
    brief_artifact_name("feedback", brief)
}

/// The artifact name of the diff an implementer's commit was handed to its verifier (and its pipeline
/// successors) with.
pub fn diff_name(brief: BriefId) -> String {
    brief_artifact_name("diff", brief)
}

/// `kind/<the brief's whole id>`. Names carried the id's first 8 hex digits until 2026-11-25, and two
/// briefs of a large run share those (about one pair in a run of 100,000 briefs): a 100,000-brief run
/// signed a slice off against another brief's report.
pub(crate) fn brief_artifact_name(kind: &str, brief: BriefId) -> String {
    format!("{kind}/{}", brief.whole())
}

/// The newest artifact `name_of(brief)` of `brief`. A run recorded by an earlier build named it by the id's
/// first 8 hex digits, which two of its briefs can share: such an artifact is taken only when it is this
/// brief's own.
pub(crate) fn brief_artifact(
    store: &dyn Blackboard,
    run: RunId,
    brief: BriefId,
    name_of: fn(BriefId) -> String,
) -> Result<Option<agency_store::Artifact>> {
    let name = name_of(brief);
    if let Some(found) = store.latest_artifact(run, &name)? {
        return Ok(Some(found));
    }
    let Some((kind, _)) = name.split_once('/') else {
        return Ok(None);
    };
    Ok(store
        .latest_artifact(run, &format!("{kind}/{}", brief.legacy_short()))?
        .filter(|found| found.meta.brief == Some(brief)))
}

/// What a slice is called in sign-off records and artifact names: `<workstream>/<title>`.
pub(crate) fn slice_subject(brief: &Brief) -> String {
    format!("{}/{}", brief.workstream, brief.title)
}

/// The name the sign-off crate stores a verify record under.
pub(crate) fn verify_name(subject: &str) -> String {
    format!("signoff/{subject}/verify")
}

/// The name of the record that `workstream` went into the integration branch (its branch name).
pub(crate) fn merged_name(workstream: &str) -> String {
    format!("merged/{workstream}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn briefs_whose_ids_begin_alike_name_their_artifacts_apart() {
        // The two ids of a collision a 100,000-brief run met.
        let a = BriefId("ee75b930-8024-4b26-a05c-df8d652cfec7".parse().unwrap());
        let b = BriefId("ee75b930-8028-4cb2-ad2b-e07081e20bef".parse().unwrap());
        assert_eq!(a.legacy_short(), b.legacy_short());
        for name_of in [output_name, report_name, feedback_name, diff_name] {
            assert_ne!(name_of(a), name_of(b));
        }
        assert_eq!(report_name(a), "report/ee75b93080244b26a05cdf8d652cfec7");
    }

    #[test]
    fn a_short_named_artifact_of_an_earlier_build_is_read_only_by_its_own_brief() {
        use agency_store::conformance::sample_brief;
        use agency_store::{NewArtifact, NewRun, SqliteBlackboard};

        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let brief = |id: &str| Brief {
            id: BriefId(id.parse().unwrap()),
            ..sample_brief(run, id)
        };
        let (a, b, c) = (
            brief("ee75b930-8024-4b26-a05c-df8d652cfec7"),
            brief("ee75b930-8028-4cb2-ad2b-e07081e20bef"),
            brief("0123abcd-0000-4000-8000-000000000000"),
        );
        for each in [&a, &b, &c] {
            store.insert_brief(each).unwrap();
        }
        let legacy = |of: &Brief, text: &str| {
            NewArtifact::new(
                run,
                format!("report/{}", of.id.legacy_short()),
                "text/plain",
                text,
            )
            .brief(of.id)
        };
        store.put_artifact(legacy(&a, "a's, short-named")).unwrap();
        store
            .put_artifact(legacy(&b, "b's, short-named and newer"))
            .unwrap();
        store.put_artifact(legacy(&c, "c's, short-named")).unwrap();
        let read = |of: &Brief| {
            brief_artifact(&store, run, of.id, report_name)
                .unwrap()
                .map(|found| String::from_utf8(found.bytes).unwrap())
        };
        assert_eq!(read(&b).as_deref(), Some("b's, short-named and newer"));
        assert_eq!(read(&c).as_deref(), Some("c's, short-named"));
        assert_eq!(read(&a), None, "never another brief's artifact");
        store
            .put_artifact(NewArtifact::new(run, report_name(a.id), "text/plain", "a's").brief(a.id))
            .unwrap();
        assert_eq!(read(&a).as_deref(), Some("a's"));
    }
}
