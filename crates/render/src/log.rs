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

use agency_core::event::{Event, EventPayload, payload};
use agency_core::gate::GateKind;
use agency_core::tier::Tier;
use agency_store::RunStatus;
use serde_json::Value;

use agency_review::one_line;

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

fn tier_column(event: &Event) -> String {
    event
        .tier
        .map(|t| t.as_str().to_ascii_uppercase())
        .unwrap_or_else(|| "RUN".into())
}

fn gate_word(kind: Option<GateKind>) -> &'static str {
    // Inspection gates review a tier's artifact; the others ask for approval to go on.
    match kind {
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

/// ` — why` for a line whose event carries a reason: its first line at the normal level, all of it with
/// `--verbose` (the whole text is also in `agency show <run> brief <id>`).
fn because(reason: Option<&str>, level: Level) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) if level == Level::Verbose => format!(" — {reason}"),
        Some(reason) => format!(" — {}", one_line(reason, REASON_CHARS)),
        None => String::new(),
    }
}

/// The runner's one-line "what happens next" and the anomalies it found, from a gate's summary (a tier
/// summary document the gate's writer owns, kept as JSON in the event).
fn gate_opened(summary: &Value, level: Level) -> String {
    let message = summary
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("Waiting for a decision");
    // What the runner found worth a look (a shallower path than the variety asks, ...) is part of why.
    let anomalies: Vec<&str> = summary
        .get("anomalies")
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
    format!("⏸  {message}{anomalies}")
}

fn verify_line(verify: &payload::SignoffVerify) -> String {
    let on = Some(verify.rev.as_str())
        .filter(|r| !r.is_empty())
        .map(|r| format!(" on {}", r.chars().take(8).collect::<String>()))
        .unwrap_or_default();
    let status = match (&verify.status, verify.exit_code) {
        (Some(status), _) => status.clone(),
        (None, Some(code)) => format!("exit {code}"),
        (None, None) if verify.timed_out == Some(true) => "timed out".into(),
        (None, None) => "did not run".into(),
    };
    let subject = match (&verify.workstream, &verify.subject) {
        (Some(workstream), _) => format!("{workstream} on the integration branch"),
        (None, Some(subject)) => subject.clone(),
        (None, None) => String::new(),
    };
    let command = Some(verify.command.as_str())
        .filter(|c| !c.is_empty())
        .unwrap_or("?");
    format!(
        "{} `{command}` {}{on} ({status}) — {subject}",
        if verify.passed { "✓" } else { "✗" },
        if verify.passed { "passed" } else { "failed" },
    )
}

fn line_for(event: &Event, level: Level) -> Option<Line> {
    let tier = tier_column(event);
    let mk = |column: &str, tag: &str, message: String, verbose_only: bool| {
        Some(Line {
            column: column.to_string(),
            tag: tag.to_string(),
            message,
            verbose_only,
        })
    };
    let payload = match event.typed() {
        Ok(payload) => payload,
        // Said, not skipped: a record this build cannot read is something a reader should know is there.
        Err(error) => return mk(&tier, "UNREADABLE", error.to_string(), false),
    };
    let detail_of_tier = event.tier.is_some_and(|t| t != Tier::T4);
    match payload {
        EventPayload::Log(p) => {
            let tag = p.tag.as_deref().unwrap_or("LOG");
            let verbose = p.level == "verbose" || p.level == "debug";
            mk(&tier, tag, p.message, verbose)
        }
        // The seed's normal log opens with T1's PLAN_START; the bare creation is detail.
        EventPayload::RunCreated(p) => mk("RUN", "START", format!("\"{}\"", p.goal), true),
        EventPayload::RunStatus(p) => {
            // How a run ended closes its log; that it started running is detail (the seed's normal log has no
            // such line: the plan gate's APPROVED just before it says so).
            let ended = p.to.parse::<RunStatus>().is_ok_and(RunStatus::is_terminal);
            mk("RUN", "STATUS", p.to, !ended)
        }
        EventPayload::GatePending(p) => mk("GATE", gate_word(p.kind), gate_opened(&p.summary, level), false),
        EventPayload::GateApproved(p) => {
            let note = p.note.map(|n| format!(" ({n})")).unwrap_or_default();
            mk(
                "GATE",
                "APPROVED",
                format!("✓  Approved — continuing{note}"),
                false,
            )
        }
        EventPayload::GateRejected(p) => {
            let by = Some(p.by)
                .filter(|b| !b.is_empty())
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
            let reason = p.reason.unwrap_or_else(|| "no reason given".into());
            let reason = match level {
                Level::Verbose => reason,
                Level::Normal => one_line(&reason, REASON_CHARS),
            };
            mk("GATE", "REJECTED", format!("✗  Rejected{by}: {reason}"), false)
        }
        EventPayload::GatePaused(_) => mk(
            "GATE",
            "PAUSED",
            "⏸  Paused at the next tier boundary".into(),
            false,
        ),
        EventPayload::GateResumed(_) => mk("GATE", "RESUMED", "▶  Resumed".into(), false),
        EventPayload::Spawned(p) => {
            let runtime = Some(p.runtime)
                .filter(|r| !r.is_empty())
                .map(|r| format!(" [{r}]"))
                .unwrap_or_default();
            mk(&tier, "START", format!("{} spawned{runtime}", p.title), true)
        }
        // The seed's normal log shows each worker's DONE; the other tiers' completions are told by their
        // tier lines (PLAN_DONE, SPEC_DONE, MESH_DONE, VERDICT, ACCEPTED).
        EventPayload::Completed(p) => {
            let note = p.note.map(|n| format!("  ({n})")).unwrap_or_default();
            mk(&tier, "DONE", format!("{} ✓{note}", p.title), detail_of_tier)
        }
        EventPayload::Failed(p) => {
            let retry = match (p.attempt, p.retry_budget) {
                (Some(a), Some(b)) => format!("  (retry {}/{b})", a + 1),
                _ => String::new(),
            };
            let why = because(Some(&p.reason), level);
            mk(&tier, "FAIL", format!("{} ✗{retry}{why}", p.title), false)
        }
        EventPayload::Retried(p) => mk(
            &tier,
            "RETRY",
            format!(
                "{} retried with a corrected brief{}",
                p.title,
                because(Some(&p.reason), level)
            ),
            false,
        ),
        EventPayload::Escalated(p) => mk(
            &tier,
            "ESCALATED",
            format!(
                "{} → {}{}",
                p.title,
                p.to.as_deref().unwrap_or("owner"),
                because(Some(&p.reason), level)
            ),
            false,
        ),
        EventPayload::Verdict(p) => mk(&tier, "VERDICT", p.summary, false),
        EventPayload::TeachbackSubmitted(p) => {
            let title = p.title.unwrap_or_default();
            mk(&tier, "TEACHBACK", format!("{title} sent its teachback"), true)
        }
        EventPayload::TeachbackApproved(p) => {
            let title = p.title.unwrap_or_default();
            mk(&tier, "TB_APPROVED", format!("{title} may start work"), true)
        }
        EventPayload::TeachbackCorrected(p) => {
            let title = p.title.unwrap_or_default();
            mk(&tier, "TB_CORRECT", format!("{title} asked to correct"), true)
        }
        EventPayload::TeachbackDenied(p) => {
            let tool = Some(p.tool)
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| "tool call".into());
            let title = p.title.unwrap_or_default();
            mk(
                &tier,
                "TB_DENIED",
                format!("{title} {tool} denied before approval"),
                true,
            )
        }
        // A slice's sign-off is summed up by its squad's VERDICT line (and slices sign off in any order);
        // its rejections stay in view.
        EventPayload::SignoffAccepted(p) => mk(
            &tier,
            "SIGNED_OFF",
            format!("{} ✓ accepted", p.subject),
            event.tier == Some(Tier::T5),
        ),
        EventPayload::SignoffRejected(p) => {
            let missing = p.missing.unwrap_or_default().join("; ");
            mk(
                &tier,
                "SIGNOFF",
                format!("{} ✗ rejected: {missing}", p.subject),
                false,
            )
        }
        EventPayload::SignoffInconclusive(p) => {
            let reason = p.reason.unwrap_or_default();
            mk(
                &tier,
                "SIGNOFF",
                format!("{} ? inconclusive: {reason}", p.subject),
                false,
            )
        }
        EventPayload::SignoffVerify(p) => mk(&tier, "VERIFY", verify_line(&p), false),
        // An auditor that agrees is detail; one that disagrees with the judge stays in view.
        EventPayload::SignoffAudit(p) => mk(
            &tier,
            "AUDIT",
            if p.agrees {
                format!("{} auditor {}, as the judge", p.subject, p.verdict)
            } else {
                format!(
                    "{} auditor {} DISAGREES with the judge ({}){}",
                    p.subject,
                    p.verdict,
                    p.judge,
                    p.missing
                        .map(|m| format!(": {}", m.join("; ")))
                        .unwrap_or_default()
                )
            },
            p.agrees,
        ),
        EventPayload::BudgetExhausted(p) => {
            let scope = Some(p.scope)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "run".into());
            mk("RUN", "BUDGET", format!("budget reached: {scope}"), false)
        }
        EventPayload::BudgetRaised(_) => mk("RUN", "BUDGET", "budget raised".into(), false),
        EventPayload::Alert(p) => mk(
            "ALERT",
            p.category.as_deref().unwrap_or("ALERT"),
            p.issue.unwrap_or_default(),
            false,
        ),
        EventPayload::Halt(p) => mk(
            "HALT",
            p.category.as_deref().unwrap_or("HALT"),
            p.issue.unwrap_or_default(),
            false,
        ),
        EventPayload::Usage(usage) => {
            let line = format!(
                "{} in / {} out  {}",
                usage.input_tokens,
                usage.output_tokens,
                // A call without a price says so rather than claiming it cost nothing.
                usage
                    .cost_usd
                    .map_or_else(|| "unpriced".to_owned(), |usd| format!("${usd:.4}"))
            );
            mk(&tier, "USAGE", line, true)
        }
        EventPayload::PlanStart(p) => mk(
            &tier,
            "PLAN_START",
            format!("Assessing scope: \"{}\"", p.goal),
            false,
        ),
        EventPayload::PlanDone(p) => mk(&tier, "PLAN_DONE", p.summary, false),
        EventPayload::PathAmendment(p) => {
            let change = p
                .amendment
                .as_ref()
                .map(|a| format!("{}: {} — ", a.workstream, a.describe()))
                .unwrap_or_default();
            mk(
                &tier,
                "AMENDMENT",
                format!("#{} {change}{} (by {})", event.seq, p.reason, p.proposed_by),
                false,
            )
        }
        EventPayload::PathAmendmentDecided(p) => {
            let outcome = if p.approved {
                let path = p
                    .path_after
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join("→");
                format!("approved by {}: {} now runs {path}", p.by, p.workstream)
            } else {
                format!(
                    "rejected by {}: {}",
                    p.by,
                    p.note.as_deref().unwrap_or("no reason given")
                )
            };
            mk(&tier, "AMENDMENT", format!("#{} {outcome}", p.amendment), false)
        }
        EventPayload::Anomaly(p) => {
            let about = p.workstream.map(|w| format!("{w}: ")).unwrap_or_default();
            mk(
                &tier,
                "ANOMALY",
                format!("⚠  {about}{} ({})", p.message, p.source),
                false,
            )
        }
        EventPayload::Agreement(p) => {
            // Agreed and assumed handoffs are detail; a mismatch is said at the normal level.
            let found = match p.outcome.as_str() {
                "assumed" => agency_core::event::payload::AGREEMENT_ASSUMED.to_string(),
                "mismatch" => format!(
                    "MISMATCH{}: {}",
                    if p.significant { " (significant)" } else { "" },
                    p.differences.join("; ")
                ),
                other => other.to_string(),
            };
            // A significant mismatch is put to the handing-over tier: the line says what it answered.
            let answer = match (p.confirmation.as_deref(), p.reason.as_deref()) {
                (Some("asking"), _) => " — asking the handing-over tier".to_string(),
                (Some("confirmed"), reason) => format!(" — confirmed fine{}", answer_reason(reason)),
                (Some("corrected"), reason) => format!(" — corrected{}", answer_reason(reason)),
                // The record's reason is already the seed's fallback wording, with why nobody was asked.
                (Some("unavailable"), Some(reason)) => format!(" — {reason}"),
                (Some("unavailable"), None) => {
                    format!(" — {}", agency_core::event::payload::AGREEMENT_ASSUMED)
                }
                _ => String::new(),
            };
            let found = found + &answer;
            mk(
                &tier,
                "AGREEMENT",
                format!("{} {} {}: {found}", p.level, p.handoff, p.workstream),
                p.outcome != "mismatch",
            )
        }
        EventPayload::SignoffStarted(_)
        | EventPayload::BriefCreated(_)
        | EventPayload::BriefStatus(_)
        | EventPayload::Artifact(_) => None,
    }
}

/// `: reason` when there is one.
fn answer_reason(reason: Option<&str>) -> String {
    reason.map(|r| format!(": {r}")).unwrap_or_default()
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
    use agency_core::event::EventKind;
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
    #[test]
    fn an_agreement_mismatch_is_a_normal_line_and_the_fallback_a_verbose_one() {
        let mismatch = event(
            EventKind::Agreement,
            json!({ "level": "L1", "handoff": "t4→t5", "workstream": "ws-arith", "outcome": "mismatch",
                    "significant": true, "differences": ["mul.sh is outside what was handed over"] }),
        );
        let line = render_event(&mismatch, Level::Normal).unwrap();
        assert!(
            line.ends_with("AGREEMENT     L1 t4→t5 ws-arith: MISMATCH (significant): mul.sh is outside what was handed over"),
            "{line}"
        );
        let corrected = event(
            EventKind::Agreement,
            json!({ "level": "L1", "handoff": "t4→t5", "workstream": "ws-arith", "outcome": "mismatch",
                    "significant": true, "differences": ["mul.sh is outside what was handed over"],
                    "confirmation": "corrected", "reason": "mul.sh belongs to ws-mul" }),
        );
        let line = render_event(&corrected, Level::Normal).unwrap();
        assert!(
            line.ends_with("MISMATCH (significant): mul.sh is outside what was handed over — corrected: mul.sh belongs to ws-mul"),
            "{line}"
        );
        let confirmed = event(
            EventKind::Agreement,
            json!({ "level": "L0", "handoff": "t1→t2", "workstream": "ws-arith", "outcome": "mismatch",
                    "significant": true, "differences": ["lib/ is outside what was handed over"],
                    "confirmation": "confirmed", "reason": "the helper belongs there" }),
        );
        let line = render_event(&confirmed, Level::Normal).unwrap();
        assert!(
            line.ends_with("— confirmed fine: the helper belongs there"),
            "{line}"
        );
        let assumed = event(
            EventKind::Agreement,
            json!({ "level": "L1", "handoff": "t4→t5", "workstream": "ws-add", "outcome": "assumed" }),
        );
        assert!(render_event(&assumed, Level::Normal).is_none());
        let line = render_event(&assumed, Level::Verbose).unwrap();
        assert!(
            line.ends_with("Agreement: [assumed — specialist unavailable for verification]"),
            "{line}"
        );
    }
}
