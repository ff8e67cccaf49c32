//! A sign-off as a human reviews it: stage 1's verify run (command, how it ended, the tail of its output)
//! and the judge's account and verdict, from the `signoff_verify` and `signoff_*` events and the records
//! they name.

use std::fmt::Write as _;

use agency_core::event::EventKind;
use serde_json::Value;

use super::tail_lines;

fn text<'a>(payload: &'a Value, key: &str) -> Option<&'a str> {
    payload.get(key).and_then(Value::as_str)
}

/// How many lines of a verify run's output are shown.
pub const VERIFY_TAIL_LINES: usize = 40;

/// One verify run: `payload` is its `signoff_verify` event's, `output` the whole tail its record kept (the
/// event holds only its last KiB).
pub fn render_verify(payload: &Value, output: Option<&str>) -> String {
    let mut out = String::new();
    let passed = payload.get("passed").and_then(Value::as_bool) == Some(true);
    let ending = match (
        payload.get("exit_code").and_then(Value::as_i64),
        payload.get("timed_out").and_then(Value::as_bool),
    ) {
        (_, Some(true)) => "timed out".to_string(),
        (Some(code), _) => format!("exit {code}"),
        (None, _) => "did not run".to_string(),
    };
    let seconds = payload
        .get("duration_ms")
        .and_then(Value::as_u64)
        .map(|ms| format!(" in {:.1}s", ms as f64 / 1000.0))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{} `{}` {} ({ending}{seconds})",
        if passed { "✓" } else { "✗" },
        text(payload, "command").unwrap_or("?"),
        if passed { "passed" } else { "failed" },
    );
    if let Some(subject) = text(payload, "workstream").or_else(|| text(payload, "subject")) {
        let _ = writeln!(out, "  of     {subject}");
    }
    if let Some(rev) = text(payload, "rev") {
        let _ = writeln!(out, "  on     {rev}");
    }
    let output = output.or_else(|| text(payload, "tail")).unwrap_or("");
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

/// A sign-off's outcome: the verdict, what is missing or why there is none, the judge's account, then its
/// whole transcript when it was kept.
pub fn render_judge(kind: EventKind, payload: &Value, transcript: Option<&str>) -> String {
    let mut out = String::new();
    let subject = text(payload, "subject").unwrap_or("?");
    match kind {
        EventKind::SignoffAccepted => {
            let _ = writeln!(out, "✓ accepted — {subject}");
        }
        EventKind::SignoffRejected => {
            let by = text(payload, "by").unwrap_or("?");
            let _ = writeln!(out, "✗ rejected by {by} — {subject}");
            let missing: Vec<&str> = payload
                .get("missing")
                .and_then(Value::as_array)
                .map(|m| m.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !missing.is_empty() {
                out.push_str("  missing:\n");
                for item in missing {
                    let _ = writeln!(out, "    - {item}");
                }
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "? inconclusive — {subject}: {}",
                text(payload, "reason").unwrap_or("no reason recorded")
            );
        }
    }
    if let Some(commit) = text(payload, "commit") {
        let _ = writeln!(out, "  commit {commit}");
    }
    if let Some(account) = text(payload, "summary").filter(|s| !s.trim().is_empty()) {
        out.push_str("  the judge's account:\n");
        for line in account.trim_end().lines() {
            let _ = writeln!(out, "    {}", line.replace('\x1b', "^["));
        }
    }
    if let Some(transcript) = transcript.filter(|t| !t.trim().is_empty()) {
        out.push_str("  transcript:\n");
        for line in transcript.trim_end().lines() {
            let _ = writeln!(out, "    │ {}", line.replace('\x1b', "^["));
        }
    }
    out
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
}
