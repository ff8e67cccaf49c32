//! One brief for review: what it was asked (goal anchor, instructions, contract), where it stands, why each
//! of its attempts failed (the whole reason, which the live log cuts to one line), and its teachback with
//! every review it had.

use std::fmt::Write as _;

use agency_core::brief::Brief;
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::teachback::ReviewVerdict;

fn block(out: &mut String, label: &str, body: &str) {
    let _ = writeln!(out, "{label}:");
    for line in body.trim_end().lines() {
        let _ = writeln!(out, "  {}", line.replace('\x1b', "^["));
    }
}

/// The brief whole: `feedback` is what a retried attempt started from, `events` the brief's own.
pub fn render_brief(brief: &Brief, feedback: Option<&str>, events: &[Event]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}  [{}]  {} — attempt {} of {}",
        brief.tier.as_str().to_ascii_uppercase(),
        brief.title,
        brief.id.short(),
        brief.status.as_str(),
        brief.attempt + 1,
        brief.retry_budget + 1
    );
    let _ = writeln!(out, "workstream  {}", brief.workstream);
    if let Some(score) = brief.variety_score() {
        let _ = writeln!(
            out,
            "variety     {score} (teachback {})",
            brief.teachback_mode().as_str()
        );
    }
    let _ = writeln!(out, "teachback   {}", brief.teachback.as_str());
    if let Some(branch) = &brief.branch {
        let _ = writeln!(out, "branch      {branch}");
    }
    block(&mut out, "goal anchor", &brief.goal_anchor);
    block(&mut out, "instructions", &brief.instructions);
    if let Some(contract) = &brief.contract {
        out.push_str("contract:\n");
        let _ = writeln!(out, "  done when      {}", contract.done_when);
        let _ = writeln!(
            out,
            "  verify         {}",
            contract.verify.as_deref().unwrap_or("none")
        );
        for mode in &contract.failure_modes {
            let _ = writeln!(out, "  failure mode   {mode}");
        }
        for path in &contract.may_edit {
            let _ = writeln!(out, "  may edit       {path}");
        }
    }
    if !brief.inputs.is_empty() {
        let _ = writeln!(out, "inputs      {}", brief.inputs.join(", "));
    }
    if let Some(feedback) = feedback {
        block(&mut out, "started from this feedback", feedback);
    }
    for event in events {
        let what = match event.kind {
            EventKind::Failed => "failed",
            EventKind::Escalated => "escalated",
            _ => continue,
        };
        let label_at = event.ts.format("%Y-%m-%d %H:%M:%S UTC");
        match event.typed() {
            Ok(EventPayload::Failed(failure) | EventPayload::Escalated(failure)) => {
                let to = failure.to.map(|t| format!(" to {t}")).unwrap_or_default();
                let why = Some(failure.reason.as_str())
                    .filter(|r| !r.is_empty())
                    .unwrap_or("no reason recorded");
                block(&mut out, &format!("{what}{to} at {label_at}"), why);
            }
            Ok(_) => {}
            // Said, not skipped: a record this build cannot read is something a reviewer should know of.
            Err(error) => block(
                &mut out,
                &format!("{what} at {label_at}: UNREADABLE"),
                &error.to_string(),
            ),
        }
    }
    out
}

fn or_unknown(who: &str) -> &str {
    if who.is_empty() { "?" } else { who }
}

fn note(out: &mut String, note: Option<&str>) {
    if let Some(note) = note {
        let _ = writeln!(out, "  note: {note}");
    }
}

/// The teachback's history: each restatement sent and each review, oldest first, then the gate's denials.
pub fn render_teachback(brief: &Brief, events: &[Event]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "teachback of {} {}  [{}] — {} (mode {})",
        brief.tier.as_str().to_ascii_uppercase(),
        brief.title,
        brief.id.short(),
        crate::gather::teachback_label(brief),
        brief.teachback_mode().as_str()
    );
    let mut any = false;
    for event in events {
        let when = event.ts.format("%Y-%m-%d %H:%M:%S UTC");
        let payload = match event.typed() {
            Ok(payload) => payload,
            Err(error) => {
                if crate::gather::TEACHBACK_KINDS.contains(&event.kind) {
                    let _ = writeln!(out, "UNREADABLE {} {when}: {error}", event.kind);
                    any = true;
                }
                continue;
            }
        };
        match payload {
            EventPayload::TeachbackSubmitted(sent) => {
                // The hook records the text it was sent; the runner's own agent records the document
                // alone, shown in the same bullet form a reviewer reads.
                let text = sent.text.clone().or_else(|| {
                    serde_json::from_value::<agency_core::Teachback>(sent.teachback.clone())
                        .ok()
                        .map(|document| document.to_string())
                });
                block(
                    &mut out,
                    &format!("sent {when}"),
                    text.as_deref().unwrap_or("(no text recorded)"),
                );
            }
            EventPayload::TeachbackApproved(review) => {
                let _ = writeln!(out, "approved by {} {when}", or_unknown(&review.reviewer));
                note(&mut out, review.note.as_deref());
            }
            EventPayload::TeachbackCorrected(review) => {
                let _ = writeln!(
                    out,
                    "corrections asked by {} {when}:",
                    or_unknown(&review.reviewer)
                );
                if let Some(ReviewVerdict::Corrections(items)) = &review.verdict {
                    for item in items {
                        let _ = writeln!(out, "  - {item}");
                    }
                }
                note(&mut out, review.note.as_deref());
            }
            EventPayload::TeachbackDenied(denied) => {
                let _ = writeln!(
                    out,
                    "{} {} {when}",
                    Some(denied.tool.as_str())
                        .filter(|t| !t.is_empty())
                        .unwrap_or("a tool call"),
                    if denied.blocked == Some(true) {
                        "denied before approval"
                    } else {
                        "would have been denied before approval"
                    }
                );
            }
            _ => continue,
        }
        any = true;
    }
    if !any {
        out.push_str("no teachback sent\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use agency_core::event::{Event, EventKind};
    use agency_core::{BriefId, RunId};
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    use super::*;

    fn event(kind: EventKind, payload: serde_json::Value) -> Event {
        Event {
            seq: 7,
            run: RunId::new(),
            ts: Utc.with_ymd_and_hms(2026, 11, 27, 6, 0, 0).unwrap(),
            brief: Some(BriefId::new()),
            tier: None,
            kind,
            payload,
        }
    }

    fn brief() -> Brief {
        Brief {
            id: BriefId::new(),
            run: RunId::new(),
            parent: None,
            tier: agency_core::Tier::T4,
            workstream: "ws".into(),
            title: "fix-mul".into(),
            personality: None,
            goal_anchor: "fix it".into(),
            instructions: "fix mul.sh".into(),
            inputs: Vec::new(),
            variety: None,
            contract: None,
            retry_budget: 1,
            attempt: 0,
            depends_on: Vec::new(),
            branch: None,
            worktree: None,
            status: agency_core::BriefStatus::Running,
            teachback: agency_core::TeachbackState::Pending,
            claimed_by: None,
            created_at: Utc.with_ymd_and_hms(2026, 11, 27, 6, 0, 0).unwrap(),
        }
    }

    #[test]
    fn a_teachback_history_reads_typed_and_an_unreadable_record_is_said() {
        let brief = brief();
        let events = [
            event(
                EventKind::TeachbackSubmitted,
                json!({ "text": "I will fix mul.sh" }),
            ),
            event(
                EventKind::TeachbackCorrected,
                json!({ "reviewer": "t3/ws", "verdict": { "corrections": ["keep the test"] } }),
            ),
            event(EventKind::TeachbackApproved, json!({ "reviewer": 3 })),
            event(
                EventKind::TeachbackDenied,
                json!({ "tool": "Edit", "blocked": true }),
            ),
        ];
        let text = render_teachback(&brief, &events);
        assert!(
            text.contains("sent 2026-11-27 06:00:00 UTC:\n  I will fix mul.sh\n"),
            "{text}"
        );
        assert!(
            text.contains("corrections asked by t3/ws 2026-11-27 06:00:00 UTC:\n  - keep the test\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "UNREADABLE teachback_approved 2026-11-27 06:00:00 UTC: the payload of a teachback_approved"
            ),
            "{text}"
        );
        assert!(text.contains("Edit denied before approval"), "{text}");
    }

    #[test]
    fn a_teachback_the_runners_own_agent_sent_shows_its_document() {
        let document = json!({
            "building": "a fix for mul.sh", "key_constraints": ["keep the test"], "interfaces": [],
            "approach": "multiply", "most_likely_wrong": "overflow", "least_confident": "signs"
        });
        let brief = brief();
        let events = [event(
            EventKind::TeachbackSubmitted,
            json!({ "teachback": document, "via": "runner" }),
        )];
        let text = render_teachback(&brief, &events);
        assert!(text.contains("- Building: a fix for mul.sh"), "{text}");
        assert!(text.contains("- Key constraints: keep the test"), "{text}");
    }
}
