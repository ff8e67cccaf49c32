//! One brief for review: what it was asked (goal anchor, instructions, contract), where it stands, why each
//! of its attempts failed (the whole reason, which the live log cuts to one line), and its teachback with
//! every review it had.

use std::fmt::Write as _;

use agency_core::brief::Brief;
use agency_core::event::{Event, EventKind};
use serde_json::Value;

fn text<'a>(payload: &'a Value, key: &str) -> Option<&'a str> {
    payload.get(key).and_then(Value::as_str)
}

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
        let why = text(&event.payload, "reason").unwrap_or("no reason recorded");
        let what = match event.kind {
            EventKind::Failed => "failed",
            EventKind::Escalated => "escalated",
            _ => continue,
        };
        let to = text(&event.payload, "to")
            .map(|t| format!(" to {t}"))
            .unwrap_or_default();
        let label = format!("{what}{to} at {}", event.ts.format("%Y-%m-%d %H:%M:%S UTC"));
        block(&mut out, &label, why);
    }
    out
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
        let p = &event.payload;
        match event.kind {
            EventKind::TeachbackSubmitted => {
                block(&mut out, &format!("sent {when}"), text(p, "text").unwrap_or(""));
            }
            EventKind::TeachbackApproved | EventKind::TeachbackCorrected => {
                let by = text(p, "reviewer").unwrap_or("?");
                let corrections: Vec<&str> = p
                    .pointer("/verdict/corrections")
                    .and_then(Value::as_array)
                    .map(|c| c.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if event.kind == EventKind::TeachbackApproved {
                    let _ = writeln!(out, "approved by {by} {when}");
                } else {
                    let _ = writeln!(out, "corrections asked by {by} {when}:");
                    for item in corrections {
                        let _ = writeln!(out, "  - {item}");
                    }
                }
                if let Some(note) = text(p, "note") {
                    let _ = writeln!(out, "  note: {note}");
                }
            }
            EventKind::TeachbackDenied => {
                let blocked = p.get("blocked").and_then(Value::as_bool) == Some(true);
                let _ = writeln!(
                    out,
                    "{} {} {when}",
                    text(p, "tool").unwrap_or("a tool call"),
                    if blocked {
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
