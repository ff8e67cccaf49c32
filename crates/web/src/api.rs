//! The JSON API: runs, one run's briefs and gates, its events (with their live-log lines), and the two gate
//! decisions. Ids in paths are full or short ids, or any unique part at either end, as on the command line.

use std::collections::BTreeMap;

use agency_core::gate::{Gate, GateDecision};
use agency_core::{Brief, Event, RunId};
use agency_render::log::{Level, render_event};
use agency_store::Run;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};

use crate::Dashboard;
use crate::auth::Authorized;
use crate::error::ApiError;

/// Who the blackboard says decided a gate through the dashboard.
pub const DECIDER: &str = "dashboard";
/// The most events one page returns.
pub const MAX_PAGE: usize = 1_000;

/// Runs a blocking blackboard call off the event loop.
pub(crate) async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(call)
        .await
        .map_err(|e| ApiError::internal(format!("the blackboard call did not finish: {e}")))?
}

/// A run in the list.
#[derive(Debug, Serialize)]
pub struct RunRow {
    #[serde(flatten)]
    run: RunSummary,
    /// Gates of this run waiting for a decision.
    pending_gates: usize,
}

/// What the page shows of a run.
#[derive(Debug, Serialize)]
pub struct RunSummary {
    id: RunId,
    short: String,
    goal: String,
    repo: String,
    status: &'static str,
    /// `team`, `goals` or `session` ([`agency_store::RunKind`]).
    kind: &'static str,
    /// A team run not ended that no runner drives: it waits for `agency run --resume` or `agency cancel`.
    no_runner: bool,
    /// [`agency_core::config::SANDBOX_OFF_BANNER`] when the run started with team.yaml's `sandbox.mode:
    /// off` (the page shows it on each of its gates), else null.
    sandbox_off: Option<&'static str>,
    /// RFC 3339.
    created_at: String,
    /// RFC 3339.
    updated_at: String,
}

impl RunSummary {
    fn of(run: &Run, store: &dyn agency_store::Blackboard) -> Self {
        RunSummary {
            id: run.id,
            short: run.id.short(),
            goal: run.goal.clone(),
            repo: run.repo.clone(),
            status: run.status.as_str(),
            kind: agency_store::RunKind::of(run).as_str(),
            no_runner: agency_store::unattached(store, run),
            sandbox_off: agency_core::config::sandbox_off_in(&run.config)
                .then_some(agency_core::config::SANDBOX_OFF_BANNER),
            created_at: run.created_at.to_rfc3339(),
            updated_at: run.updated_at.to_rfc3339(),
        }
    }
}

/// `GET /api/runs`: every run, newest first, with how many gates each has pending.
pub async fn runs(State(d): State<Dashboard>, _: Authorized) -> Result<Json<Vec<RunRow>>, ApiError> {
    let store = d.store.clone();
    let rows = blocking(move || {
        let mut pending: BTreeMap<RunId, usize> = BTreeMap::new();
        for gate in store.pending_gates(None)? {
            *pending.entry(gate.run).or_default() += 1;
        }
        Ok(store
            .list_runs()?
            .iter()
            .map(|run| RunRow {
                run: RunSummary::of(run, store.as_ref()),
                pending_gates: pending.get(&run.id).copied().unwrap_or(0),
            })
            .collect())
    })
    .await?;
    Ok(Json(rows))
}

/// One brief as the page lists it.
#[derive(Debug, Serialize)]
pub struct BriefRow {
    id: String,
    parent: Option<String>,
    tier: &'static str,
    workstream: String,
    title: String,
    status: &'static str,
    teachback: &'static str,
    attempt: u32,
    branch: Option<String>,
}

impl BriefRow {
    fn of(brief: &Brief) -> Self {
        BriefRow {
            id: brief.id.short(),
            parent: brief.parent.map(|p| p.short()),
            tier: brief.tier.as_str(),
            workstream: brief.workstream.clone(),
            title: brief.title.clone(),
            status: brief.status.as_str(),
            teachback: agency_review::gather::teachback_label(brief),
            attempt: brief.attempt,
            branch: brief.branch.clone(),
        }
    }
}

/// `GET /api/runs/{run}`.
#[derive(Debug, Serialize)]
pub struct RunDetail {
    run: RunSummary,
    briefs: Vec<BriefRow>,
    gates: Vec<Gate>,
    /// The run's path amendments, in the order proposed, each with its decision.
    amendments: Vec<AmendmentRow>,
}

/// A path amendment as the dashboard lists it (docs/protocols.md, "Path amendments").
#[derive(Debug, Serialize)]
pub struct AmendmentRow {
    /// Its number: the `path_amendment` event's seq (`agency amendment approve <run> <seq>`).
    pub seq: i64,
    /// The workstream it concerns.
    pub workstream: Option<String>,
    /// What it changes (`add t3 before t5`), when it names a change.
    pub change: Option<String>,
    /// Why the proposer wants it.
    pub reason: String,
    /// Who proposed it (`t4/fix-add`).
    pub proposed_by: String,
    /// `proposed`, `approved` or `rejected`.
    pub status: &'static str,
    /// Who decided it.
    pub decided_by: Option<String>,
    /// The approval note or the rejection's reason.
    pub note: Option<String>,
    /// The workstream's path after an approval (`t3→t4→t3→t5`).
    pub path_after: Option<String>,
}

/// Every path amendment of `run` with its decision, read from its `path_amendment` and
/// `path_amendment_decided` events and folded as the runner folds them
/// ([`agency_core::event::amendments::fold`]). An event that does not read as its kind is an error, never
/// skipped.
fn amendments_of(store: &dyn agency_store::Blackboard, run: RunId) -> Result<Vec<AmendmentRow>, ApiError> {
    use agency_core::event::EventKind;
    use agency_core::event::amendments::{Recorded, fold};
    use agency_core::tier::path_text;
    use agency_store::walk::each_event_of_kinds;
    let mut found: Vec<Recorded> = Vec::new();
    let kinds = [EventKind::PathAmendment, EventKind::PathAmendmentDecided];
    each_event_of_kinds::<ApiError>(store, run, &kinds, 0, |event| {
        fold(&mut found, &event).map_err(|e| ApiError::internal(e.to_string()))
    })?;
    Ok(found
        .into_iter()
        .map(|r| {
            let workstream = r.workstream().map(str::to_string);
            let change = r.proposal.amendment.as_ref().map(|a| a.describe());
            let (status, decided_by, note, path_after) = match r.decision {
                None => ("proposed", None, None, None),
                Some(d) => (
                    if d.approved { "approved" } else { "rejected" },
                    Some(d.by),
                    d.note,
                    (!d.path_after.is_empty()).then(|| path_text(&d.path_after)),
                ),
            };
            AmendmentRow {
                seq: r.seq,
                workstream,
                change,
                reason: r.proposal.reason,
                proposed_by: r.proposal.proposed_by,
                status,
                decided_by,
                note,
                path_after,
            }
        })
        .collect())
}

/// `GET /api/runs/{run}`: the run, its briefs in creation order, and its gates (pending ones first).
pub async fn run(
    State(d): State<Dashboard>,
    _: Authorized,
    Path(run): Path<String>,
) -> Result<Json<RunDetail>, ApiError> {
    let store = d.store.clone();
    let detail = blocking(move || {
        let id = store.resolve_run(&run)?;
        let record = store.get_run(id)?;
        let briefs = store.list_briefs(id)?.iter().map(BriefRow::of).collect();
        let mut gates = store.list_gates(id)?;
        gates.sort_by_key(|g| (g.status != agency_core::gate::GateStatus::Pending, g.opened_at));
        let amendments = amendments_of(store.as_ref(), id)?;
        Ok(RunDetail {
            run: RunSummary::of(&record, store.as_ref()),
            briefs,
            gates,
            amendments,
        })
    })
    .await?;
    Ok(Json(detail))
}

/// Which events to return.
#[derive(Debug, Deserialize)]
pub struct Page {
    /// Events after this sequence number (0: from the start).
    #[serde(default)]
    pub after: i64,
    /// At most this many (default 200, at most [`MAX_PAGE`]).
    pub limit: Option<usize>,
}

/// An event with the live-log line it renders to.
#[derive(Debug, Serialize)]
pub struct EventRow {
    #[serde(flatten)]
    pub event: Event,
    /// What `agency watch --verbose` prints for it, if it prints anything.
    pub line: Option<String>,
}

impl EventRow {
    /// `event` with its live-log line, as `agency watch --verbose` prints it (the dashboard shows the
    /// per-agent lines too; the page has room for them).
    pub fn of(event: Event) -> Self {
        EventRow {
            line: render_event(&event, Level::Verbose),
            event,
        }
    }
}

/// `GET /api/runs/{run}/events?after=N&limit=M`: the next page of a run's events.
pub async fn events(
    State(d): State<Dashboard>,
    _: Authorized,
    Path(run): Path<String>,
    Query(page): Query<Page>,
) -> Result<Json<Vec<EventRow>>, ApiError> {
    let limit = page.limit.unwrap_or(200).clamp(1, MAX_PAGE);
    let store = d.store.clone();
    let events = blocking(move || {
        let id = store.resolve_run(&run)?;
        Ok(store.events_after(Some(id), page.after, limit)?)
    })
    .await?;
    Ok(Json(events.into_iter().map(EventRow::of).collect()))
}

/// The body of an approval: an optional note (a budget gate reads `tokens=N` / `usd=X` from it).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    #[serde(default)]
    note: Option<String>,
}

/// The body of a rejection: the reason the tier is re-invoked with.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RejectBody {
    reason: String,
}

/// Reads a JSON body, naming what was expected when it does not fit.
fn body<T: serde::de::DeserializeOwned>(bytes: &[u8], expected: &str) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the request body: expected {expected} ({e})")))
}

/// `POST /api/gates/{gate}/approve` with `{"note": "..."}` or no body.
pub async fn approve(
    State(d): State<Dashboard>,
    _: Authorized,
    Path(gate): Path<String>,
    bytes: Bytes,
) -> Result<Json<Gate>, ApiError> {
    let ApproveBody { note } = if bytes.iter().all(u8::is_ascii_whitespace) {
        ApproveBody::default()
    } else {
        body(&bytes, r#"JSON like {"note": "why"} (the note is optional)"#)?
    };
    let note = note.filter(|n| !n.trim().is_empty());
    decide(
        &d,
        gate,
        GateDecision::Approve {
            by: DECIDER.into(),
            note,
        },
    )
    .await
}

/// `POST /api/gates/{gate}/reject` with `{"reason": "..."}`: the tier is re-invoked with the reason.
pub async fn reject(
    State(d): State<Dashboard>,
    _: Authorized,
    Path(gate): Path<String>,
    bytes: Bytes,
) -> Result<Json<Gate>, ApiError> {
    let RejectBody { reason } = body(&bytes, r#"JSON like {"reason": "what to change"}"#)?;
    if reason.trim().is_empty() {
        return Err(ApiError::bad_request(
            "reason: must say why; the tier is re-invoked with it",
        ));
    }
    decide(
        &d,
        gate,
        GateDecision::Reject {
            by: DECIDER.into(),
            reason,
        },
    )
    .await
}

async fn decide(d: &Dashboard, gate: String, decision: GateDecision) -> Result<Json<Gate>, ApiError> {
    let store = d.store.clone();
    let runners_in = d.runners_in.clone();
    let gate = blocking(move || {
        let id = store.resolve_gate(&gate)?;
        let decided = store.decide_gate(id, decision)?;
        if let Some(agency_dir) = runners_in {
            agency_toolgate::wire::poke_runners(&agency_dir);
        }
        Ok(decided)
    })
    .await?;
    Ok(Json(gate))
}

/// Anything else: 404 in the API's shape.
pub async fn not_found() -> ApiError {
    ApiError::not_found("no such page; the API is under /api/runs and /api/gates")
}
