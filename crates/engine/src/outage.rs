//! Infrastructure failures are not agent failures. A model call that still fails after the provider's own
//! retries because the provider is overloaded, rate-limited, unreachable, erroring (5xx), too slow or drops
//! its stream says nothing about the agent's work: its brief goes back to `pending` with its attempt
//! untouched (no retry spent, no escalation, no re-plan), and the run pauses at a `pause` gate whose message
//! names the cause — which the notifiers announce like any gate. `agency resume <run>` releases it once the
//! provider is back, and the brief starts again. A teachback reviewer's model in an outage is the same:
//! its agent is stopped (the link keeps the outage, see [`crate::brief_link`]), its brief waits with its attempt
//! not spent, and the gate names the reviewer's tier, model and provider.
//!
//! A run started with `--auto-approve` has no human to wait for: its runner probes the provider that failed
//! (one tiny request of the gate's tier's model, which retries inside the call as any does), with a growing
//! wait between probes, and releases the gate itself once a probe is answered — an `OUTAGE` line says each
//! step. It stops probing after `runner.outage_probe_minutes` and leaves the gate to a human, saying so.
//! Without `--auto-approve` the gate waits for `agency resume`, whatever the provider does.

use std::time::Instant;

use agency_core::event::payload::{BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::{Gate, GateDecision, GateKind, GateStatus};
use agency_core::{Brief, BriefStatus, RunId, Tier};
use agency_flow::outage::{self, AfterProbe, PROBE_WAIT_FIRST, ProbeAnswer, Probed};
use agency_llm::{CallMeta, CancelToken, LlmError, Message, ProviderTrouble, Request};
use agency_store::{Blackboard, NewGate};
use serde_json::json;

use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::probes::Probe;
use crate::reviewer_outage::ReviewerOutage;

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
    pause(
        engine,
        brief,
        &error.to_string(),
        "the model call failed after its retries",
        brief.tier,
    )
}

/// Puts `brief` back to wait for its teachback's reviewer, whose model is in an outage, and pauses the run
/// at an outage gate if none is open yet: the gate names the reviewer's model and provider, and an
/// `--auto-approve` runner probes the reviewer's tier. The brief starts again from its teachback.
pub(crate) fn pause_for_reviewer(engine: &Engine, brief: &Brief, outage: &ReviewerOutage) -> Result<()> {
    pause(
        engine,
        brief,
        &outage.to_string(),
        "its teachback's review failed after its retries",
        outage.tier,
    )
}

/// [`pause_for`] with the cause said and the tier whose model an `--auto-approve` runner probes.
fn pause(engine: &Engine, brief: &Brief, cause: &str, what: &str, probe: Tier) -> Result<()> {
    engine.move_brief(
        brief,
        BriefStatus::Pending,
        BriefStatusChange {
            outage: Some(true),
            ..BriefStatusChange::because(format!("outage: {cause}"))
        },
    )?;
    let run = brief.run;
    let already = gate_pending(engine.store.as_ref(), run)?;
    outage_line(
        engine.store.as_ref(),
        brief,
        &format!("{what} ({cause}); the brief waits, its attempt not spent"),
    )?;
    if !outage::opens_gate(already) {
        return Ok(());
    }
    open_gate(engine.store.as_ref(), run, cause, probe)
}

/// Whether an outage's gate (not a human's `agency pause`) holds `run`.
pub(crate) fn outage_gate_pending(store: &dyn Blackboard, run: RunId) -> Result<bool> {
    Ok(store
        .list_gates_of_kind(run, GateKind::Pause)?
        .into_iter()
        .any(|g| g.status == GateStatus::Pending && g.summary["requested_by"] == OUTAGE_REQUESTER))
}

/// Whether an outage (or a human's pause) holds `run` at a pending `pause` gate.
pub(crate) fn gate_pending(store: &dyn Blackboard, run: RunId) -> Result<bool> {
    Ok(store
        .list_gates_of_kind(run, GateKind::Pause)?
        .into_iter()
        .any(|g| g.status == GateStatus::Pending))
}

/// A teachback sent through the blackboard (Claude Code, Codex, pi) whose reviewer's model is in an
/// outage: its agent is not the runner's to stop, and it cannot write until its teachback is reviewed, so
/// it waits as it is while the run pauses at the outage gate (unless one is open already); the review is
/// tried again once the gate is decided. Nothing is charged to the brief.
pub(crate) fn pause_for_board_reviewer(
    engine: &Engine,
    brief: &Brief,
    outage: &ReviewerOutage,
) -> Result<()> {
    let cause = outage.to_string();
    let store = engine.store.as_ref();
    outage_line(
        store,
        brief,
        &format!(
            "its teachback's review failed after its retries ({cause}); it waits under review, nothing charged"
        ),
    )?;
    if !outage::opens_gate(gate_pending(store, brief.run)?) {
        return Ok(());
    }
    open_gate(store, brief.run, &cause, outage.tier)
}

/// Opens the outage gate of `run`: the cause, who asked, and whose model an `--auto-approve` runner probes.
fn open_gate(store: &dyn Blackboard, run: RunId, cause: &str, probe: Tier) -> Result<()> {
    let short = run.short();
    let summary = json!({
        "message": format!(
            "Outage: {cause}. The run is paused; no brief was charged for it. `agency resume {short}` once the \
             provider answers again"
        ),
        "cause": cause,
        "requested_by": OUTAGE_REQUESTER,
        // Whose model to probe when the run may resume by itself (`--auto-approve`).
        "tier": probe.as_str(),
        "next": [format!("`agency resume {short}` starts the waiting briefs again")],
    });
    store.open_gate(NewGate::new(run, GateKind::Pause, summary))?;
    Ok(())
}

/// After a writer's agent ended: the error that stops the runner when the filesystem of its worktree is
/// full ([`agency_flow::outage::disk_full`]), with a `DISK FULL` line in the run's log; `None` otherwise (a worktree that cannot
/// be measured is not taken for full). A brief whose worktree is not on record yet (its record rides with
/// a later write) is measured where the worktrees are made.
pub(crate) fn disk_full_after(
    store: &dyn Blackboard,
    worktrees: &std::path::Path,
    brief: &Brief,
) -> Result<Option<EngineError>> {
    let worktree = brief
        .worktree
        .as_deref()
        .map_or_else(|| worktrees.to_path_buf(), std::path::PathBuf::from);
    let Some(available) = available_bytes(&worktree) else {
        return Ok(None);
    };
    if !outage::disk_full(available) {
        return Ok(None);
    }
    let during = format!(
        "the agent of {} {} worked there and it is full, so its writes may have failed and its outcome \
         is not taken",
        brief.tier.as_str(),
        brief.title
    );
    store.append_event(
        NewEvent::typed(
            brief.run,
            EventPayload::Log(LogLine::new(
                "normal",
                Some("DISK FULL"),
                format!(
                    "{} {}: '{}' has {available} bytes free; the brief is given back, its attempt not spent",
                    brief.tier.as_str(),
                    brief.title,
                    worktree.display()
                ),
            )),
        )
        .brief(brief.id)
        .tier(brief.tier),
    )?;
    Ok(Some(EngineError::DiskFull {
        path: worktree,
        available,
        during,
    }))
}

/// Bytes free to an unprivileged writer on the filesystem holding `path`; `None` when it cannot be read.
fn available_bytes(path: &std::path::Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Who an outage gate says asked for it: how an outage's pause is told from a human's `agency pause`.
const OUTAGE_REQUESTER: &str = "runner (outage)";

/// Whether `gate` is a pause the runner opened for an outage (not a human's `agency pause`).
pub(crate) fn is_outage_gate(gate: &Gate) -> bool {
    gate.kind == GateKind::Pause && gate.summary["requested_by"] == OUTAGE_REQUESTER
}

/// With `--auto-approve`, tends an outage gate: sends a probe when one is due, reads the answer of the one
/// in flight, and releases the gate once the provider answers. Returns whether it released the gate. Never
/// blocks: the probe runs on its own task.
pub(crate) fn auto_resume(engine: &Engine, gate: &Gate) -> Result<bool> {
    let Some(bound) = outage::probing_bound(engine.config.runner.outage_probe_minutes) else {
        return Ok(false);
    };
    if !is_outage_gate(gate) {
        return Ok(false);
    }
    let mut probes = engine
        .outage_probes
        .0
        .lock()
        .map_err(|_| EngineError::State("outage probes poisoned".into()))?;
    let now = Instant::now();
    let probe = probes.entry(gate.id).or_insert_with(|| Probe {
        began: now,
        sent: 0,
        wait: PROBE_WAIT_FIRST,
        next: now + PROBE_WAIT_FIRST,
        answer: None,
        done: false,
    });
    if probe.done {
        return Ok(false);
    }
    let tier = outage::probed_tier(gate.summary["tier"].as_str());
    if let Some(answer) = &mut probe.answer {
        let result = match answer.try_recv() {
            Ok(result) => result,
            Err(tokio::sync::oneshot::error::TryRecvError::Empty) => return Ok(false),
            Err(tokio::sync::oneshot::error::TryRecvError::Closed) => Err(LlmError::Connection(
                "the probe's task ended without an answer".into(),
            )),
        };
        probe.answer = None;
        let answer = match result {
            Ok(()) => ProbeAnswer::Answered,
            Err(error) if error.is_retryable() => ProbeAnswer::Outage(error.to_string()),
            // Not an outage's answer (a budget refusal, a scripted provider with nothing to say, a
            // rejected request): the runner cannot tell the provider is back, so a human decides.
            Err(error) => ProbeAnswer::Other(error.to_string()),
        };
        let short = gate.run.short();
        let probed = Probed {
            tier,
            sent: probe.sent,
            probing_for: probe.began.elapsed(),
            bound,
            wait: probe.wait,
            run: &short,
        };
        match outage::after_probe(probed, &answer) {
            AfterProbe::Release(note) => {
                probes.remove(&gate.id);
                drop(probes);
                log(engine.store.as_ref(), gate.run, tier, &note)?;
                engine.store.decide_gate(
                    gate.id,
                    GateDecision::Approve {
                        by: "auto".into(),
                        note: Some(note),
                    },
                )?;
                return Ok(true);
            }
            AfterProbe::Again(line) => {
                probe.next = Instant::now() + probe.wait;
                probe.wait = outage::next_wait(probe.wait);
                drop(probes);
                log(engine.store.as_ref(), gate.run, tier, &line)?;
                return Ok(false);
            }
            AfterProbe::GiveUp(line) => {
                probe.done = true;
                drop(probes);
                log(engine.store.as_ref(), gate.run, tier, &line)?;
                return Ok(false);
            }
        }
    }
    if Instant::now() < probe.next {
        return Ok(false);
    }
    let Some(provider) = engine.providers.get(&tier).cloned() else {
        probe.done = true;
        return Ok(false);
    };
    // A slice's sign-off also calls the auditor's own model when it has one: the run resumes once both
    // answer (the gate does not say which of them failed).
    let auditor = (tier == Tier::T5)
        .then(|| engine.auditor.as_ref().map(|a| a.provider.clone()))
        .flatten();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        probe.done = true;
        return Ok(false);
    };
    probe.sent += 1;
    let (tell, answer) = tokio::sync::oneshot::channel();
    probe.answer = Some(answer);
    let model = match &auditor {
        Some(auditor) => format!("{} and {}", provider.model(), auditor.model()),
        None => provider.model().to_string(),
    };
    let (sent, run) = (probe.sent, gate.run);
    drop(probes);
    log(
        engine.store.as_ref(),
        run,
        tier,
        &format!("probe {sent}: asking {model} whether it answers again (--auto-approve)"),
    )?;
    runtime.spawn(async move {
        let request = probe_request(run, tier);
        let mut answered = Ok(());
        for provider in std::iter::once(provider).chain(auditor) {
            answered = provider
                .complete(&request, &mut |_| {}, &CancelToken::new())
                .await
                .map(|_| ());
            if answered.is_err() {
                break;
            }
        }
        let _ = tell.send(answered);
    });
    Ok(false)
}

/// The smallest request that shows a model answers; charged to the run like any call.
fn probe_request(run: RunId, tier: Tier) -> Request {
    let mut request = Request {
        messages: vec![Message::user("Reply with the single word: ok")],
        max_tokens: 16,
        ..Request::default()
    };
    request.meta = CallMeta {
        run: Some(run),
        role: Some("outage probe".into()),
        tier: Some(tier),
        ..CallMeta::default()
    };
    request
}

/// The `OUTAGE` line of `brief`: `<tier> <title>: <what>`.
fn outage_line(store: &dyn Blackboard, brief: &Brief, what: &str) -> Result<()> {
    store.append_event(
        NewEvent::typed(
            brief.run,
            EventPayload::Log(LogLine::new(
                "normal",
                Some("OUTAGE"),
                format!("{} {}: {what}", brief.tier.as_str(), brief.title),
            )),
        )
        .brief(brief.id)
        .tier(brief.tier),
    )?;
    Ok(())
}

fn log(store: &dyn Blackboard, run: RunId, tier: Tier, message: &str) -> Result<()> {
    store.append_event(
        NewEvent::typed(
            run,
            EventPayload::Log(LogLine::new("normal", Some("OUTAGE"), message.to_string())),
        )
        .tier(tier),
    )?;
    Ok(())
}
