//! Infrastructure failures are not agent failures. A model call that still fails after the provider's own
//! retries because the provider is overloaded, rate-limited, unreachable, erroring (5xx), too slow or drops
//! its stream says nothing about the agent's work: its brief goes back to `pending` with its attempt
//! untouched (no retry spent, no escalation, no re-plan), and the run pauses at a `pause` gate whose message
//! names the cause — which the notifiers announce like any gate. `agency resume <run>` releases it once the
//! provider is back, and the brief starts again.

use agency_core::event::payload::{BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::{Brief, BriefStatus};
use agency_llm::{CallMeta, LlmError, ProviderTrouble};
use agency_store::NewGate;
use serde_json::json;

use crate::engine::Engine;
use crate::error::Result;

/// Whether `error` is the provider's trouble rather than the agent's.
pub(crate) fn is_outage(error: &LlmError) -> bool {
    error.is_retryable()
}

/// The log line of a model call's trouble, written the moment it is noticed: `STALL` when the provider went
/// silent past the idle timeout (whether the call retries or gives up), `RETRY` for an attempt that failed
/// otherwise and is retried inside the call (a short outage: nothing else of it shows).
pub(crate) fn trouble_line(meta: &CallMeta, trouble: &ProviderTrouble) -> LogLine {
    let who = match (&meta.brief, meta.tier) {
        (Some(brief), _) => brief.clone(),
        (None, Some(tier)) => tier.as_str().to_string(),
        (None, None) => "a call".to_string(),
    };
    let next = match trouble.retry {
        Some((attempt, delay)) => format!(
            "attempt {attempt} failed; retrying in {:.1} s",
            delay.as_secs_f64()
        ),
        None => "the call gives up".to_string(),
    };
    let (tag, what) = if trouble.stalled {
        ("STALL", "the provider went silent")
    } else {
        ("RETRY", "the provider failed")
    };
    LogLine::new(
        "normal",
        Some(tag),
        format!("{} for {who}: {what} ({}); {next}", trouble.model, trouble.error),
    )
}

/// Puts `brief` back to wait for the provider, and pauses the run at an outage gate if none is open yet.
pub(crate) fn pause_for(engine: &Engine, brief: &Brief, error: &LlmError) -> Result<()> {
    let cause = error.to_string();
    engine.move_brief(
        brief,
        BriefStatus::Pending,
        BriefStatusChange {
            outage: Some(true),
            ..BriefStatusChange::because(format!("outage: {cause}"))
        },
    )?;
    let run = brief.run;
    let already = engine
        .store
        .list_gates_of_kind(run, GateKind::Pause)?
        .into_iter()
        .any(|g| g.status == GateStatus::Pending);
    engine.store.append_event(
        NewEvent::typed(
            run,
            EventPayload::Log(LogLine::new(
                "normal",
                Some("OUTAGE"),
                format!(
                    "{} {}: the model call failed after its retries ({cause}); the brief waits, its attempt not spent",
                    brief.tier.as_str(),
                    brief.title
                ),
            )),
        )
        .brief(brief.id)
        .tier(brief.tier),
    )?;
    if already {
        return Ok(());
    }
    let short = run.short();
    let summary = json!({
        "message": format!(
            "Outage: {cause}. The run is paused; no brief was charged for it. `agency resume {short}` once the \
             provider answers again"
        ),
        "cause": cause,
        "requested_by": "runner (outage)",
        "next": [format!("`agency resume {short}` starts the waiting briefs again")],
    });
    engine
        .store
        .open_gate(NewGate::new(run, GateKind::Pause, summary))?;
    Ok(())
}
