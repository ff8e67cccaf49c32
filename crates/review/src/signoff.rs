//! A sign-off as a human reviews it: stage 1's verify run (command, how it ended, the tail of its output)
//! and the judge's account and verdict, from the `signoff_verify` and `signoff_*` events and the records
//! they name.

use std::fmt::Write as _;

use agency_core::event::payload::{SignoffAudit, SignoffOutcome, SignoffVerify};
use agency_core::event::{EventKind, EventPayload};
use serde_json::Value;

use super::tail_lines;

/// How many lines of a verify run's output are shown.
pub const VERIFY_TAIL_LINES: usize = 40;

/// A record this build cannot read, said instead of skipped: a reviewer should know it is there.
fn unreadable(kind: EventKind, error: impl std::fmt::Display) -> String {
    format!("UNREADABLE {kind}: {error}\n")
}

/// One verify run: `payload` is its `signoff_verify` event's, `output` the whole tail its record kept (the
/// event holds only its last KiB).
pub fn render_verify(payload: &Value, output: Option<&str>) -> String {
    match EventPayload::decode(EventKind::SignoffVerify, payload) {
        Ok(EventPayload::SignoffVerify(verify)) => verify_text(&verify, output),
        Ok(other) => unreadable(other.kind(), "not a verify run"),
        Err(error) => unreadable(EventKind::SignoffVerify, error),
    }
}

fn verify_text(verify: &SignoffVerify, output: Option<&str>) -> String {
    let mut out = String::new();
    let ending = match (verify.exit_code, verify.timed_out) {
        (_, Some(true)) => "timed out".to_string(),
        (Some(code), _) => format!("exit {code}"),
        (None, _) => "did not run".to_string(),
    };
    let seconds = format!(" in {:.1}s", verify.duration_ms as f64 / 1000.0);
    let _ = writeln!(
        out,
        "{} `{}` {} ({ending}{seconds})",
        if verify.passed { "✓" } else { "✗" },
        non_empty(&verify.command).unwrap_or("?"),
        if verify.passed { "passed" } else { "failed" },
    );
    if let Some(subject) = verify.workstream.as_deref().or(verify.subject.as_deref()) {
        let _ = writeln!(out, "  of     {subject}");
    }
    if let Some(rev) = non_empty(&verify.rev) {
        let _ = writeln!(out, "  on     {rev}");
    }
    let output = output.unwrap_or(&verify.tail);
    if output.trim().is_empty() {
        out.push_str("  output (none)\n");
        return out;
    }
    let (skipped, lines) = tail_lines(output, VERIFY_TAIL_LINES);
    if skipped > 0 {
        let _ = writeln!(
            out,
            "  output, last {} lines ({skipped} before them not shown):",
            lines.len()
        );
    } else {
        out.push_str("  output:\n");
    }
    for line in lines {
        let _ = writeln!(out, "    │ {}", line.replace('\x1b', "^["));
    }
    out
}

fn non_empty(text: &str) -> Option<&str> {
    Some(text).filter(|t| !t.is_empty())
}

/// A sign-off's outcome: the verdict, what is missing or why there is none, the judge's account, then its
/// whole transcript when it was kept. A `signoff_audit` event renders as the auditor's review.
pub fn render_judge(kind: EventKind, payload: &Value, transcript: Option<&str>) -> String {
    let mut out = match EventPayload::decode(kind, payload) {
        Ok(
            EventPayload::SignoffAccepted(outcome)
            | EventPayload::SignoffRejected(outcome)
            | EventPayload::SignoffInconclusive(outcome),
        ) => outcome_text(kind, &outcome),
        Ok(EventPayload::SignoffAudit(audit)) => audit_text(&audit),
        Ok(other) => return unreadable(other.kind(), "not a sign-off outcome"),
        Err(error) => return unreadable(kind, error),
    };
    if let Some(transcript) = transcript.filter(|t| !t.trim().is_empty()) {
        out.push_str("  transcript:\n");
        for line in transcript.trim_end().lines() {
            let _ = writeln!(out, "    │ {}", line.replace('\x1b', "^["));
        }
    }
    out
}

fn outcome_text(kind: EventKind, outcome: &SignoffOutcome) -> String {
    let mut out = String::new();
    let subject = non_empty(&outcome.subject).unwrap_or("?");
    match kind {
        EventKind::SignoffAccepted => {
            let _ = writeln!(out, "✓ accepted — {subject}");
        }
        EventKind::SignoffRejected => {
            let by = outcome.by.as_deref().unwrap_or("?");
            let _ = writeln!(out, "✗ rejected by {by} — {subject}");
            missing_list(&mut out, outcome.missing.as_deref().unwrap_or_default());
        }
        _ => {
            let _ = writeln!(
                out,
                "? inconclusive — {subject}: {}",
                outcome.reason.as_deref().unwrap_or("no reason recorded")
            );
        }
    }
    if let Some(commit) = non_empty(&outcome.commit) {
        let _ = writeln!(out, "  commit {commit}");
    }
    account(&mut out, "the judge's account", outcome.summary.as_deref());
    out
}

/// The auditor's review, and whether it agrees with the judge's.
fn audit_text(audit: &SignoffAudit) -> String {
    let mut out = String::new();
    let subject = non_empty(&audit.subject).unwrap_or("?");
    let mark = match audit.verdict.as_str() {
        "accept" => "✓",
        "reject" => "✗",
        _ => "?",
    };
    if audit.agrees {
        let _ = writeln!(
            out,
            "{mark} auditor {} — {subject} (agrees with the judge)",
            audit.verdict
        );
    } else {
        let _ = writeln!(
            out,
            "{mark} auditor {} — {subject}: DISAGREES with the judge ({}); a rejection by either rejects",
            audit.verdict, audit.judge
        );
    }
    if let Some(model) = &audit.model {
        let _ = writeln!(out, "  audited on {model}");
    }
    missing_list(&mut out, audit.missing.as_deref().unwrap_or_default());
    if let Some(reason) = &audit.reason {
        let _ = writeln!(out, "  no verdict: {reason}");
    }
    account(&mut out, "the auditor's account", audit.summary.as_deref());
    out
}

fn missing_list(out: &mut String, missing: &[String]) {
    if !missing.is_empty() {
        out.push_str("  missing:\n");
        for item in missing {
            let _ = writeln!(out, "    - {item}");
        }
    }
}

fn account(out: &mut String, label: &str, account: Option<&str>) {
    if let Some(account) = account.filter(|s| !s.trim().is_empty()) {
        let _ = writeln!(out, "  {label}:");
        for line in account.trim_end().lines() {
            let _ = writeln!(out, "    {}", line.replace('\x1b', "^["));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_failed_verify_shows_its_command_ending_and_the_tail_of_its_output() {
        let output: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let text = render_verify(
            &json!({ "command": "sh test_mul.sh", "exit_code": 1, "duration_ms": 1200, "passed": false,
                     "subject": "ws-arith/fix-mul", "rev": "abc123" }),
            Some(&output),
        );
        assert!(
            text.starts_with("✗ `sh test_mul.sh` failed (exit 1 in 1.2s)\n"),
            "{text}"
        );
        assert!(
            text.contains("last 40 lines (10 before them not shown)"),
            "{text}"
        );
        assert!(
            text.contains("    │ line 50\n") && !text.contains("│ line 10\n"),
            "{text}"
        );
    }

    #[test]
    fn a_rejection_lists_what_is_missing_and_the_judges_account() {
        let text = render_judge(
            EventKind::SignoffRejected,
            &json!({ "subject": "ws-arith/fix-mul", "by": "judge", "missing": ["remove the marker"],
                     "summary": "mul.sh multiplies\nbut keeps a marker" }),
            None,
        );
        insta::assert_snapshot!(text, @r"
        ✗ rejected by judge — ws-arith/fix-mul
          missing:
            - remove the marker
          the judge's account:
            mul.sh multiplies
            but keeps a marker
        ");
    }

    #[test]
    fn an_auditor_that_disagrees_is_said_with_what_it_found() {
        let text = render_judge(
            EventKind::SignoffAudit,
            &json!({ "subject": "ws-arith/fix-mul", "commit": "abc", "verdict": "reject", "judge": "accept",
                     "agrees": false, "missing": ["mul.sh keeps a marker"] }),
            None,
        );
        insta::assert_snapshot!(text, @r"
        ✗ auditor reject — ws-arith/fix-mul: DISAGREES with the judge (accept); a rejection by either rejects
          missing:
            - mul.sh keeps a marker
        ");
    }

    #[test]
    fn the_model_an_auditor_ran_on_is_said() {
        let text = render_judge(
            EventKind::SignoffAudit,
            &json!({ "subject": "ws-arith/fix-mul", "commit": "abc", "verdict": "accept", "judge": "accept",
                     "agrees": true, "model": "gpt-audit" }),
            None,
        );
        insta::assert_snapshot!(text, @r"
        ✓ auditor accept — ws-arith/fix-mul (agrees with the judge)
          audited on gpt-audit
        ");
    }

    #[test]
    fn a_record_that_does_not_read_is_said_not_skipped() {
        let text = render_judge(
            EventKind::SignoffRejected,
            &json!({ "missing": "not a list" }),
            None,
        );
        assert!(text.starts_with("UNREADABLE signoff_rejected: "), "{text}");
        let text = render_verify(&json!({ "passed": "yes" }), None);
        assert!(text.starts_with("UNREADABLE signoff_verify: "), "{text}");
    }
}
