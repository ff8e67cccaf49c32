//! A brief's teachback history, read from its run's events: the corrections it was last asked for, and the
//! algedonic ALERT for a stalled teachback (seed 000): a brief still `pending` past
//! `teachback.pending_timeout_minutes`, or `under_review` past `teachback.review_timeout_minutes`
//! (`META-BLOCK: orchestrator unreachable`), raises one `alert` event — once per stall, however often the
//! hook or `agency teachback check` looks.

use agency_core::config::TeachbackConfig;
use agency_core::event::EventPayload;
use agency_core::event::payload::Signal;
use agency_core::teachback::{ReviewVerdict, TeachbackState};
use agency_core::{AlgedonicSignal, Brief, Event, EventKind, NewEvent, SignalCategory};
use agency_store::Blackboard;
use chrono::{DateTime, Duration, Utc};

/// The message of a review that never came.
pub const ORCHESTRATOR_UNREACHABLE: &str = "META-BLOCK: orchestrator unreachable";

/// A brief's teachback history, read from its run's events.
fn brief_events(store: &dyn Blackboard, brief: &Brief) -> agency_store::Result<Vec<Event>> {
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(Some(brief.run), after, 1000)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        all.extend(page.into_iter().filter(|e| e.brief == Some(brief.id)));
    }
    Ok(all)
}

/// When the brief entered its current teachback state: its last teachback event, or its spawn (creation
/// when there is none) for `pending`.
fn entered_at(brief: &Brief, events: &[Event]) -> DateTime<Utc> {
    let relevant = |e: &&Event| match brief.teachback {
        TeachbackState::Pending => matches!(e.kind, EventKind::Spawned),
        _ => matches!(
            e.kind,
            EventKind::TeachbackSubmitted | EventKind::TeachbackApproved | EventKind::TeachbackCorrected
        ),
    };
    events
        .iter()
        .rev()
        .find(relevant)
        .map_or(brief.created_at, |e| e.ts)
}

/// The alert due for this brief now, if any: past its timeout and not yet raised for this stall.
pub fn due(
    brief: &Brief,
    events: &[Event],
    config: &TeachbackConfig,
    now: DateTime<Utc>,
) -> Option<NewEvent> {
    let (minutes, message) = match brief.teachback {
        TeachbackState::Pending => (
            config.pending_timeout_minutes,
            format!(
                "teachback not sent within {} minutes",
                config.pending_timeout_minutes
            ),
        ),
        TeachbackState::UnderReview => (
            config.review_timeout_minutes,
            format!(
                "{ORCHESTRATOR_UNREACHABLE}: teachback not reviewed within {} minutes",
                config.review_timeout_minutes
            ),
        ),
        TeachbackState::Correcting | TeachbackState::Active => return None,
    };
    let since = entered_at(brief, events);
    if now - since < Duration::minutes(i64::from(minutes)) {
        return None;
    }
    let already = events
        .iter()
        .any(|e| {
            e.kind == EventKind::Alert
                && e.ts >= since
                && matches!(e.typed(), Ok(EventPayload::Alert(alert)) if alert.teachback_state == Some(brief.teachback))
        });
    if already {
        return None;
    }
    Some(
        NewEvent::typed(
            brief.run,
            EventPayload::Alert(Signal {
                message: Some(message.clone()),
                teachback_state: Some(brief.teachback),
                since: Some(since),
                notify: Some(true),
                source: Some("teachback_timeout".to_string()),
                title: Some(brief.title.clone()),
                ..AlgedonicSignal::alert(
                    SignalCategory::MetaBlock,
                    format!("{}: {message}", brief.title),
                    format!(
                        "its teachback has been `{}` since {} ({minutes} min allowed)",
                        brief.teachback.as_str(),
                        since.format("%Y-%m-%d %H:%M:%S UTC")
                    ),
                    "a blocking teachback keeps the agent from writing: its brief, and what depends on it, waits",
                    format!(
                        "`agency show {} teachback {}` shows where it stands; `agency teachback approve|correct {}` \
                         decides a teachback under review",
                        brief.run.short(),
                        brief.id.short(),
                        brief.id.short()
                    ),
                )
                .payload()
            }),
        )
        .brief(brief.id)
        .at(now),
    )
}

/// Raises the brief's due alert, if any, and returns it. Also says so on stderr, so a human running the
/// command (or reading the hook's output) sees it at once.
pub fn raise_due(
    store: &dyn Blackboard,
    brief: &Brief,
    config: &TeachbackConfig,
    now: DateTime<Utc>,
) -> agency_store::Result<Option<Event>> {
    if !matches!(
        brief.teachback,
        TeachbackState::Pending | TeachbackState::UnderReview
    ) {
        return Ok(None);
    }
    // The stall began no earlier than the brief was created, so a brief younger than its timeout cannot be
    // stalled yet: the hook records denials this way without reading the run's events.
    let timeout = match brief.teachback {
        TeachbackState::Pending => config.pending_timeout_minutes,
        _ => config.review_timeout_minutes,
    };
    if now - brief.created_at < Duration::minutes(i64::from(timeout)) {
        return Ok(None);
    }
    let events = brief_events(store, brief)?;
    let Some(alert) = due(brief, &events, config, now) else {
        return Ok(None);
    };
    let event = store.append_event(alert)?;
    eprintln!(
        "ALERT brief {} ({}): {}",
        brief.id.short(),
        brief.title,
        match event.typed() {
            Ok(EventPayload::Alert(alert)) => alert.message.unwrap_or_default(),
            _ => String::new(),
        }
    );
    Ok(Some(event))
}

/// The latest corrections asked of a brief, for the denial reason while it is `correcting`.
pub fn latest_corrections(store: &dyn Blackboard, brief: &Brief) -> agency_store::Result<Vec<String>> {
    let events = brief_events(store, brief)?;
    Ok(events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::TeachbackCorrected)
        .and_then(|e| match e.typed() {
            Ok(EventPayload::TeachbackCorrected(reviewed)) => match reviewed.verdict {
                Some(ReviewVerdict::Corrections(items)) => Some(items),
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_default())
}
