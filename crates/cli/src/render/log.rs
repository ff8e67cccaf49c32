//! The human-readable live log (seed 001, "Run Visibility Layer"):
//!
//! ```text
//! [0192ab3c] 12:30:01  T1   PLAN_START    Assessing scope: "Build webhook ingestion system"
//! [0192ab3c] 12:30:14  GATE APPROVAL      ⏸  Waiting on approval before T2 spawns
//! ```
//!
//! `normal` shows tier-level events; `verbose` adds per-agent lines (spawns, completions, teachbacks,
//! usage). Runners narrate tier-level progress with `log` events carrying a `tag` (`PLAN_DONE`,
//! `MESH_START`, ...); structured events get a line of their own here.

use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::gate::GateKind;
use agency_store::RunStatus;
use serde_json::Value;

use crate::render::review::one_line;

/// How much of the log to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Tier-level events only.
    Normal,
    /// Also per-agent lines.
    Verbose,
}

/// One rendered line's parts, before layout.
struct Line {
    column: String,
    tag: String,
    message: String,
    verbose_only: bool,
}

fn text<'a>(payload: &'a Value, key: &str) -> Option<&'a str> {
    payload.get(key).and_then(Value::as_str)
}

/// "worker-3 " when the event names the agent, so parallel workers can be told apart.
fn agent_prefix(payload: &Value) -> String {
    text(payload, "agent")
        .map(|a| format!("{a} "))
        .unwrap_or_default()
}

fn tier_column(event: &Event) -> String {
    event
        .tier
        .map(|t| t.as_str().to_ascii_uppercase())
        .unwrap_or_else(|| "RUN".into())
}

fn gate_word(payload: &Value) -> &'static str {
    // Inspection gates review a tier's artifact; the others ask for approval to go on.
    match text(payload, "kind").and_then(|g| g.parse::<GateKind>().ok()) {
        Some(GateKind::T2Lead | GateKind::T2Synthesis | GateKind::T3Plan | GateKind::T5Verdict) => {
            "INSPECTION"
        }
        Some(GateKind::Teachback) => "TEACHBACK",
        Some(GateKind::Budget) => "BUDGET",
        Some(GateKind::Escalation) => "ESCALATION",
        Some(GateKind::Halt) => "HALT",
        _ => "APPROVAL",
    }
}

/// How much of a reason a normal-level line keeps: its first line, cut to this many characters.
const REASON_CHARS: usize = 160;

/// ` — why` for a line whose event carries a `reason`: its first line at the normal level, all of it with
/// `--verbose` (the whole text is also in `agency show <run> brief <id>`).
fn because(payload: &Value, level: Level) -> String {
    match text(payload, "reason").map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) if level == Level::Verbose => format!(" — {reason}"),
        Some(reason) => format!(" — {}", one_line(reason, REASON_CHARS)),
        None => String::new(),
    }
}

fn line_for(event: &Event, level: Level) -> Option<Line> {
    let p = &event.payload;
    let tier = tier_column(event);
    let mk = |column: &str, tag: &str, message: String, verbose_only: bool| {
        Some(Line {
            column: column.to_string(),
            tag: tag.to_string(),
            message,
            verbose_only,
        })
    };
    let title = text(p, "title").unwrap_or("");
    // Sign-off records name what they judged `subject`.
    let subject = text(p, "title").or_else(|| text(p, "subject")).unwrap_or("");
    match event.kind {
        EventKind::Log => {
            let tag = text(p, "tag").unwrap_or("LOG");
            let verbose = text(p, "level") == Some("verbose") || text(p, "level") == Some("debug");
            mk(&tier, tag, text(p, "message").unwrap_or("").to_string(), verbose)
        }
        EventKind::RunCreated => mk(
            "RUN",
            "START",
            format!("\"{}\"", text(p, "goal").unwrap_or("")),
            // The seed's normal log opens with T1's PLAN_START; the bare creation is detail.
            true,
        ),
        EventKind::RunStatus => {
            let to = text(p, "to").unwrap_or("");
            // How a run ended closes its log; that it started running is detail (the seed's normal log has no
            // such line: the plan gate's APPROVED just before it says so).
            let ended = to.parse::<RunStatus>().is_ok_and(RunStatus::is_terminal);
            mk("RUN", "STATUS", to.to_string(), !ended)
        }
        EventKind::PlanStart => mk(
            &tier,
            "PLAN_START",
            format!("Assessing scope: \"{}\"", text(p, "goal").unwrap_or("")),
            false,
        ),
        EventKind::PlanDone => mk(
            &tier,
            "PLAN_DONE",
            text(p, "summary").unwrap_or("").to_string(),
            false,
        ),
        EventKind::GatePending => {
            // The summary's `message` is the one-line "what happens next" the runner wrote for the human.
            let message = p
                .get("summary")
                .and_then(|s| text(s, "message"))
                .unwrap_or("Waiting for a decision");
            // What the runner found worth a look (a shallower path than the variety asks, ...) is part of why.
            let anomalies: Vec<&str> = p
                .pointer("/summary/anomalies")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let anomalies = match (anomalies.is_empty(), level) {
                (true, _) => String::new(),
                (false, Level::Verbose) => format!(" — anomalies: {}", anomalies.join("; ")),
                (false, Level::Normal) => {
                    format!(" — anomalies: {}", one_line(&anomalies.join("; "), REASON_CHARS))
                }
            };
            mk("GATE", gate_word(p), format!("⏸  {message}{anomalies}"), false)
        }
        EventKind::GateApproved => {
            let note = text(p, "note").map(|n| format!(" ({n})")).unwrap_or_default();
            mk(
                "GATE",
                "APPROVED",
                format!("✓  Approved — continuing{note}"),
                false,
            )
        }
        EventKind::GateRejected => {
            let by = text(p, "by").map(|b| format!(" by {b}")).unwrap_or_default();
            let reason = text(p, "reason").unwrap_or("no reason given");
            let reason = match level {
                Level::Verbose => reason.to_string(),
                Level::Normal => one_line(reason, REASON_CHARS),
            };
            mk("GATE", "REJECTED", format!("✗  Rejected{by}: {reason}"), false)
        }
        EventKind::GatePaused => mk(
            "GATE",
            "PAUSED",
            "⏸  Paused at the next tier boundary".into(),
            false,
        ),
        EventKind::GateResumed => mk("GATE", "RESUMED", "▶  Resumed".into(), false),
        EventKind::Spawned => {
            let runtime = text(p, "runtime").map(|r| format!(" [{r}]")).unwrap_or_default();
            mk(
                &tier,
                "START",
                format!("{}{title} spawned{runtime}", agent_prefix(p)),
                true,
            )
        }
        EventKind::Completed => {
            let note = text(p, "note").map(|n| format!("  ({n})")).unwrap_or_default();
            // The seed's normal log shows each worker's DONE; the other tiers' completions are told by
            // their tier lines (PLAN_DONE, SPEC_DONE, MESH_DONE, VERDICT, ACCEPTED).
            let detail = event.tier.is_some_and(|t| t != agency_core::tier::Tier::T4);
            mk(
                &tier,
                "DONE",
                format!("{}{title} ✓{note}", agent_prefix(p)),
                detail,
            )
        }
        EventKind::Failed => {
            let retry = match (
                p.get("attempt").and_then(Value::as_u64),
                p.get("retry_budget").and_then(Value::as_u64),
            ) {
                (Some(a), Some(b)) => format!("  (retry {}/{b})", a + 1),
                _ => String::new(),
            };
            mk(
                &tier,
                "FAIL",
                format!("{}{title} ✗{retry}{}", agent_prefix(p), because(p, level)),
                false,
            )
        }
        EventKind::Retried => mk(
            &tier,
            "RETRY",
            format!("{title} retried with a corrected brief{}", because(p, level)),
            false,
        ),
        EventKind::Escalated => mk(
            &tier,
            "ESCALATED",
            format!(
                "{title} → {}{}",
                text(p, "to").unwrap_or("owner"),
                because(p, level)
            ),
            false,
        ),
        EventKind::Verdict => mk(
            &tier,
            "VERDICT",
            text(p, "summary").unwrap_or("").to_string(),
            false,
        ),
        EventKind::PathAmendment => mk(
            &tier,
            "AMENDMENT",
            format!(
                "{} (by {})",
                text(p, "reason").unwrap_or(""),
                text(p, "proposed_by").unwrap_or("?")
            ),
            false,
        ),
        EventKind::TeachbackSubmitted => mk(&tier, "TEACHBACK", format!("{title} sent its teachback"), true),
        EventKind::TeachbackApproved => mk(&tier, "TB_APPROVED", format!("{title} may start work"), true),
        EventKind::TeachbackCorrected => mk(&tier, "TB_CORRECT", format!("{title} asked to correct"), true),
        EventKind::TeachbackDenied => mk(
            &tier,
            "TB_DENIED",
            format!(
                "{title} {} denied before approval",
                text(p, "tool").unwrap_or("tool call")
            ),
            true,
        ),
        // A slice's sign-off is summed up by its squad's VERDICT line (and slices sign off in any order);
        // its rejections stay in view.
        EventKind::SignoffAccepted => mk(
            &tier,
            "SIGNED_OFF",
            format!("{subject} ✓ accepted"),
            event.tier == Some(agency_core::Tier::T5),
        ),
        EventKind::SignoffRejected => {
            let missing: Vec<&str> = p
                .get("missing")
                .and_then(Value::as_array)
                .map(|m| m.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            mk(
                &tier,
                "SIGNOFF",
                format!("{subject} ✗ rejected: {}", missing.join("; ")),
                false,
            )
        }
        EventKind::SignoffInconclusive => mk(
            &tier,
            "SIGNOFF",
            format!("{subject} ? inconclusive: {}", text(p, "reason").unwrap_or("")),
            false,
        ),
        EventKind::SignoffVerify => {
            let passed = p.get("passed").and_then(Value::as_bool).unwrap_or(false);
            let on = text(p, "rev")
                .map(|r| format!(" on {}", r.chars().take(8).collect::<String>()))
                .unwrap_or_default();
            let status = match (text(p, "status"), p.get("exit_code").and_then(Value::as_i64)) {
                (Some(status), _) => status.to_string(),
                (None, Some(code)) => format!("exit {code}"),
                (None, None) if p.get("timed_out").and_then(Value::as_bool) == Some(true) => {
                    "timed out".into()
                }
                (None, None) => "did not run".into(),
            };
            let subject = text(p, "workstream")
                .map(|w| format!("{w} on the integration branch"))
                .unwrap_or_else(|| subject.to_string());
            mk(
                &tier,
                "VERIFY",
                format!(
                    "{} `{}` {}{on} ({status}) — {subject}",
                    if passed { "✓" } else { "✗" },
                    text(p, "command").unwrap_or("?"),
                    if passed { "passed" } else { "failed" },
                ),
                false,
            )
        }
        EventKind::SignoffStarted => None,
        EventKind::BudgetExhausted => mk(
            "RUN",
            "BUDGET",
            format!("budget reached: {}", text(p, "scope").unwrap_or("run")),
            false,
        ),
        EventKind::BudgetRaised => mk("RUN", "BUDGET", "budget raised".into(), false),
        EventKind::Alert => mk(
            "ALERT",
            text(p, "category").unwrap_or("ALERT"),
            text(p, "issue").unwrap_or("").to_string(),
            false,
        ),
        EventKind::Halt => mk(
            "HALT",
            text(p, "category").unwrap_or("HALT"),
            text(p, "issue").unwrap_or("").to_string(),
            false,
        ),
        EventKind::Usage => {
            let line = match event.typed() {
                Ok(EventPayload::Usage(usage)) => format!(
                    "{} in / {} out  {}",
                    usage.input_tokens,
                    usage.output_tokens,
                    // A call without a price says so rather than claiming it cost nothing.
                    usage
                        .cost_usd
                        .map_or_else(|| "unpriced".to_owned(), |usd| format!("${usd:.4}"))
                ),
                // Said, not shown as a free call.
                Ok(_) | Err(_) => {
                    "a usage record that does not read (its tokens and cost are unknown)".to_string()
                }
            };
            mk(&tier, "USAGE", line, true)
        }
        EventKind::BriefCreated | EventKind::BriefStatus | EventKind::Artifact => None,
    }
}

/// Where a line's message starts: after `[run8] HH:MM:SS  `, the column and the tag.
pub const MESSAGE_COLUMN: usize = 38;

/// Renders one event as a log line, or `None` when the level hides it.
pub fn render_event(event: &Event, level: Level) -> Option<String> {
    let line = line_for(event, level)?;
    if line.verbose_only && level == Level::Normal {
        return None;
    }
    // One event, one line at the normal level: multi-line payloads (a verify tail, a list of missing items)
    // are for `--verbose`, `inspect` and `show`, which keep the lines after the first under the message.
    let message = match (line.message.split_once('\n'), level) {
        (Some((first, _)), Level::Normal) => format!("{first} …"),
        (Some(_), Level::Verbose) => line
            .message
            .lines()
            .collect::<Vec<_>>()
            .join(&format!("\n{}", " ".repeat(MESSAGE_COLUMN))),
        (None, _) => line.message,
    };
    let line = Line { message, ..line };
    let run = event.run.short();
    let time = event.ts.format("%H:%M:%S");
    Some(
        format!(
            "[{run}] {time}  {:<4} {:<13} {}",
            line.column, line.tag, line.message
        )
        .trim_end()
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use agency_core::RunId;
    use chrono::Utc;
    use serde_json::json;

    use super::*;

    fn status_change(to: &str) -> Event {
        Event {
            seq: 1,
            run: RunId::new(),
            ts: Utc::now(),
            brief: None,
            tier: None,
            kind: EventKind::RunStatus,
            payload: json!({ "from": "planning", "to": to }),
        }
    }

    fn event(kind: EventKind, payload: Value) -> Event {
        Event {
            seq: 1,
            run: RunId::new(),
            ts: Utc::now(),
            brief: None,
            tier: Some(agency_core::Tier::T4),
            kind,
            payload,
        }
    }

    #[test]
    fn fail_retry_escalated_and_rejected_lines_say_why_in_one_line_and_whole_when_verbose() {
        let why = "`sh test_mul.sh` failed on its commit (exit 1 in 0.1s):\nexpected 6\ngot 5";
        let failed = event(
            EventKind::Failed,
            json!({ "title": "fix-mul", "reason": why, "attempt": 0, "retry_budget": 2 }),
        );
        let line = render_event(&failed, Level::Normal).unwrap();
        assert!(
            line.ends_with("T4   FAIL          fix-mul ✗  (retry 1/2) — `sh test_mul.sh` failed on its commit (exit 1 in 0.1s): expected 6 got 5"),
            "{line}"
        );
        let verbose = render_event(&failed, Level::Verbose).unwrap();
        let lines: Vec<&str> = verbose.lines().collect();
        assert_eq!(lines.len(), 3, "{verbose}");
        assert_eq!(lines[2], format!("{}got 5", " ".repeat(MESSAGE_COLUMN)));

        let long = "x".repeat(500);
        let escalated = event(
            EventKind::Escalated,
            json!({ "title": "fix-mul", "to": "t3", "reason": long }),
        );
        let line = render_event(&escalated, Level::Normal).unwrap();
        assert!(
            line.contains("fix-mul → t3 — xxx") && line.ends_with("x…"),
            "{line}"
        );
        assert_eq!(line.split(" — ").nth(1).unwrap().chars().count(), REASON_CHARS);

        let retried = event(
            EventKind::Retried,
            json!({ "title": "fix-mul", "attempt": 1, "reason": "judge: remove the marker" }),
        );
        let line = render_event(&retried, Level::Normal).unwrap();
        assert!(
            line.ends_with("fix-mul retried with a corrected brief — judge: remove the marker"),
            "{line}"
        );

        let rejected = event(
            EventKind::GateRejected,
            json!({ "kind": "t1_plan", "by": "timeout", "reason": "no decision within 60 minutes" }),
        );
        let line = render_event(&rejected, Level::Normal).unwrap();
        assert!(
            line.ends_with("✗  Rejected by timeout: no decision within 60 minutes"),
            "{line}"
        );
    }

    #[test]
    fn a_run_starting_to_run_is_detail_and_how_it_ended_is_always_shown() {
        let running = status_change("running");
        assert_eq!(render_event(&running, Level::Normal), None);
        let verbose = render_event(&running, Level::Verbose).unwrap();
        assert!(verbose.ends_with("  RUN  STATUS        running"), "{verbose}");
        for ended in ["succeeded", "failed", "halted", "cancelled"] {
            let line = render_event(&status_change(ended), Level::Normal).unwrap();
            assert!(line.ends_with(&format!("  RUN  STATUS        {ended}")), "{line}");
        }
    }
}
