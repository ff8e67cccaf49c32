//! The auditor inside a run: a slice whose implementer's variety score is 7 or more is reviewed twice, by
//! the judge and by an auditor that is never shown the implementer's report. A rejection by either sends
//! the slice back; `signoff_audit` records the auditor's verdict and whether it agrees with the judge's.
//! Which reviewer's rejection stands is decided by `agency_signoff::with_audit` and tested in the sign-off
//! crate (its unit tests, and the red-team `an_auditor_that_accepts_does_not_override_the_judges_rejection`,
//! which took over this file's test of that name); here, the run's wiring of an audited rejection.
//!
//! The script is the partial profile (fix-mul's first attempt leaves a debug marker), with fix-mul scored
//! 8 so its sign-off is audited, and fix-add left at 4 so its is not.

use agency_core::event::{EventKind, EventPayload, payload};
use agency_core::{Event, Tier};

use crate::support::{FIX_MUL_RETRIED, Project, config};

/// partial.yaml with fix-mul's variety raised to 8 (auditor required); fix-add keeps 4.
fn audited_partial() -> String {
    let original = include_str!("../scripts/partial.yaml");
    let script = original.replacen(
        "instructions: \"Make mul.sh multiply.\"\n                  variety: { novelty: 1, scope: 1, uncertainty: 1, risk: 1 }",
        "instructions: \"Make mul.sh multiply.\"\n                  variety: { novelty: 2, scope: 2, uncertainty: 2, risk: 2 }",
        1,
    );
    assert_ne!(script, original, "the script's fix-mul task moved");
    // At 8 its teachback blocks too: each attempt teaches back first, and the squad lead's tier reviews it.
    let edit = "        - name: edit_file\n          input: { path: mul.sh,";
    let taught = format!(
        "        - name: submit_teachback\n          input:\n            building: \"a fix for mul.sh\"\n            \
         key_constraints: [\"do not touch test_mul.sh\"]\n            interfaces: [\"mul.sh A B prints A * B\"]\n            \
         approach: \"replace the + with a *\"\n            most_likely_wrong: \"overflow\"\n            \
         least_confident: \"negative numbers\"\n            first_action: \"edit mul.sh\"\n{edit}"
    );
    assert_eq!(script.matches(edit).count(), 2, "fix-mul's two attempts moved");
    let script = script.replace(edit, &taught);
    format!(
        "{script}\n  - role: teachback-reviewer\n    reply:\n      tool_calls:\n        - name: review_teachback\n          \
         input: {{ approved: true, note: \"Matches the brief.\" }}\n"
    )
}

/// The run's `signoff_audit` records, in order.
fn audits(events: &[Event]) -> Vec<payload::SignoffAudit> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::SignoffAudit)
        .map(|e| match e.typed() {
            Ok(EventPayload::SignoffAudit(audit)) => audit,
            other => panic!("a signoff_audit that does not read: {other:?}"),
        })
        .collect()
}

/// The slice sign-offs' outcomes of `subject`, as (kind, payload).
fn outcomes_of(events: &[Event], subject: &str) -> Vec<(EventKind, payload::SignoffOutcome)> {
    events
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(
                EventPayload::SignoffAccepted(p)
                | EventPayload::SignoffRejected(p)
                | EventPayload::SignoffInconclusive(p),
            ) if p.subject == subject => Some((e.kind, p)),
            _ => None,
        })
        .collect()
}

/// The T5 verdict notes recorded for fix-mul's sign-offs.
fn verifier_notes(project: &Project, run: agency_core::RunId) -> Vec<String> {
    project
        .events_of(run, EventKind::Completed)
        .into_iter()
        .filter(|e| e.tier == Some(Tier::T5))
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Completed(done)) if done.title == "fix-mul" => Some(done.summary),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_auditor_rejects_what_the_judge_accepted_and_the_slice_is_redone() {
    // The judge accepts everything; only the auditor sees the marker for what it is.
    let script = audited_partial().replacen(
        "  - role: judge\n    contains: \"LEFTOVER-DEBUG\"",
        "  - role: auditor\n    contains: \"LEFTOVER-DEBUG\"",
        1,
    );
    let project = Project::new();
    let (run, outcome) = project.succeed(&script, config()).await;
    assert_eq!(project.tree(run.id), FIX_MUL_RETRIED);
    let events = project.events(run.id);

    let mul = outcomes_of(&events, "ws-arith/fix-mul");
    let kinds: Vec<EventKind> = mul.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(kinds, [EventKind::SignoffRejected, EventKind::SignoffAccepted]);
    let rejected = &mul[0].1;
    assert_eq!(rejected.by.as_deref(), Some("auditor"));
    assert_eq!(
        rejected.missing.as_deref(),
        Some(&["mul.sh still carries the LEFTOVER-DEBUG marker; remove it".to_string()][..])
    );

    // Recorded: the auditor disagreed with the judge on the first attempt and agreed on the second; the
    // slice of score 4 was not audited.
    let audits = audits(&events);
    let seen: Vec<(&str, &str, &str, bool)> = audits
        .iter()
        .map(|a| (a.subject.as_str(), a.judge.as_str(), a.verdict.as_str(), a.agrees))
        .collect();
    assert_eq!(
        seen,
        [
            ("ws-arith/fix-mul", "accept", "reject", false),
            ("ws-arith/fix-mul", "accept", "accept", true),
        ]
    );
    // The auditor was shown neither the implementer's report nor its evidence.
    let transcript = project
        .artifact(run.id, "signoff/ws-arith/fix-mul/audit")
        .expect("the auditor's transcript is stored");
    assert!(transcript.contains("withheld from you"), "{transcript}");
    assert!(!transcript.contains("mul.sh multiplies"), "{transcript}");
    assert!(!transcript.contains("The agent's claims"), "{transcript}");

    // The retry is told what the auditor found; the disagreement is in the T5 verdict a human reads.
    let feedback = project.feedback(run.id, Tier::T4, "fix-mul", 1);
    assert!(feedback.contains("LEFTOVER-DEBUG"), "{feedback}");
    let notes = verifier_notes(&project, run.id);
    assert!(
        notes[0].contains("by the auditor, auditor reject: DISAGREES with the judge (accept)"),
        "{notes:?}"
    );
    assert!(notes[1].contains("judge accept, auditor accept"), "{notes:?}");
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 1);
    project.assert_fixed(&outcome.branch.unwrap(), &["add.sh", "mul.sh"]);
}
