//! The review surface's API: what a human needs to decide a gate or merge a run, as JSON the page renders
//! as text. It reads the same records `agency show` does, through [`agency_review::gather`]:
//!
//! - `GET /api/runs/{run}/review`: T1's plan (with its gate), T2's `[view …]` records of each workstream
//!   (rendered by [`agency_review::views`], the text `agency show` and the terminal `inspect` print), how
//!   the run ended (branch, pull request, T1's summary), cost per tier and per brief, and a timeline of the
//!   briefs.
//! - `GET /api/runs/{run}/briefs/{brief}`: one brief whole: its contract, why its attempts failed, its
//!   slice's diff with a file summary, the verify runs and the judge's account, its teachback history.
//! - `GET /api/runs/{run}/diff/{target}`: a workstream's branch or `integration` against the run's base
//!   commit, read with git from the run's repository on this machine.

use std::collections::BTreeMap;

use agency_core::brief::Brief;
use agency_core::event::{Event, EventKind};
use agency_core::gate::{Gate, GateKind};
use agency_core::plan::Plan;
use agency_core::{BriefId, Tier};
use agency_exec::{GitOptions, Repo, sanitize_ref_component};
use agency_review::cost::{Cost, Spend, brief_label, cost_of};
use agency_review::diff::{FileStat, file_stats};
use agency_review::gather::{self, Judgement, Outcome, PlanLookup, Span, VerifyRun};
use agency_review::views::{self, View};
use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use crate::Dashboard;
use crate::api::blocking;
use crate::auth::Authorized;
use crate::error::ApiError;

/// T1's plan as the page shows it at its gate.
#[derive(Debug, Serialize)]
pub struct PlanView {
    /// The plan brief's short id.
    brief: String,
    plan: Plan,
    /// Each workstream's variety score and the route it takes, in the plan's order.
    scores: Vec<WorkstreamScore>,
    /// The plan gate of that brief, newest first.
    gate: Option<Gate>,
    /// The commands that decide it in a terminal, while it is pending.
    decide: Vec<String>,
}

/// A workstream's variety score and route.
#[derive(Debug, Serialize)]
pub struct WorkstreamScore {
    id: String,
    score: u8,
    route: &'static str,
}

/// One row of the cost table.
#[derive(Debug, Serialize)]
pub struct CostRow {
    /// A tier (`t1` … `t5`, `run`) or a brief's label.
    label: String,
    spend: Spend,
    /// The spend as text: `$0.0123`, `unpriced`, `$0.01 + 2 unpriced calls`.
    usd: String,
}

/// What a run cost, in the order the page shows it.
#[derive(Debug, Serialize)]
pub struct CostView {
    total: CostRow,
    tiers: Vec<CostRow>,
    /// Busiest first.
    briefs: Vec<CostRow>,
}

/// `GET /api/runs/{run}/review`.
#[derive(Debug, Serialize)]
pub struct RunReview {
    plan: Option<PlanView>,
    /// Why no plan is shown when T1 wrote one that does not validate.
    plan_problem: Option<String>,
    outcome: Outcome,
    cost: CostView,
    timeline: Vec<Span>,
    /// T2's records of each workstream that has one, in the order of the workstreams' first briefs.
    views: Vec<ViewText>,
}

/// One of T2's `[view …]` records of a workstream, rendered as `agency show` prints it.
#[derive(Debug, Serialize)]
pub struct ViewText {
    workstream: String,
    view: View,
    /// The seed's line for it, `[view domain boundaries]` say.
    label: &'static str,
    /// The rendered text (heading, then the record).
    text: String,
}

/// The `[view …]` records T2 wrote for the workstreams of `briefs`.
fn view_texts(
    store: &dyn agency_store::Blackboard,
    run: agency_core::RunId,
    briefs: &[Brief],
) -> Result<Vec<ViewText>, agency_store::StoreError> {
    let mut workstreams: Vec<&str> = Vec::new();
    for brief in briefs.iter().filter(|b| b.tier != Tier::T1) {
        if !workstreams.contains(&brief.workstream.as_str()) {
            workstreams.push(&brief.workstream);
        }
    }
    let mut out = Vec::new();
    for ws in workstreams {
        for view in View::ALL {
            if let Some(text) = views::read(store, run, ws, view)? {
                out.push(ViewText {
                    workstream: ws.to_string(),
                    view,
                    label: view.label(),
                    text: views::render(view, ws, Some(&text)),
                });
            }
        }
    }
    Ok(out)
}

fn row(label: String, spend: &Spend) -> CostRow {
    CostRow {
        label,
        usd: spend.usd_text(),
        spend: spend.clone(),
    }
}

fn cost_view(cost: &Cost, briefs: &BTreeMap<BriefId, Brief>) -> CostView {
    CostView {
        total: row("total".into(), &cost.total),
        tiers: cost
            .tiers_in_order()
            .into_iter()
            .map(|(t, s)| row(t.clone(), s))
            .collect(),
        briefs: cost
            .briefs_by_spend()
            .into_iter()
            .map(|(b, s)| row(brief_label(briefs, *b), s))
            .collect(),
    }
}

/// `GET /api/runs/{run}/review`: the plan at its gate, the outcome, the cost and the timeline.
pub async fn run_review(
    State(d): State<Dashboard>,
    _: Authorized,
    Path(run): Path<String>,
) -> Result<Json<RunReview>, ApiError> {
    let store = d.store.clone();
    let review = blocking(move || {
        let id = store.resolve_run(&run)?;
        let record = store.get_run(id)?;
        let all = gather::all_events(store.as_ref(), id)?;
        let briefs = store.list_briefs(id)?;
        let (plan, plan_problem) = match gather::plan_of(store.as_ref(), &record)? {
            PlanLookup::Found(planner, plan) => {
                let gate = store
                    .list_gates_of_kind(id, GateKind::T1Plan)?
                    .into_iter()
                    .rev()
                    .find(|g| g.brief == Some(planner.id));
                let decide = match &gate {
                    Some(g) if g.status == agency_core::gate::GateStatus::Pending => {
                        agency_review::decision_commands(&id.short(), g.kind)
                    }
                    _ => Vec::new(),
                };
                let scores = plan
                    .workstreams
                    .iter()
                    .map(|ws| WorkstreamScore {
                        id: ws.id.clone(),
                        score: ws.variety.score(),
                        route: ws.route().as_str(),
                    })
                    .collect();
                let view = PlanView {
                    brief: planner.id.short(),
                    scores,
                    plan: *plan,
                    gate,
                    decide,
                };
                (Some(view), None)
            }
            PlanLookup::Invalid(problem) => (None, Some(problem)),
            PlanLookup::NotYet => (None, None),
        };
        let by_id: BTreeMap<BriefId, Brief> = briefs.iter().map(|b| (b.id, b.clone())).collect();
        Ok(RunReview {
            plan,
            plan_problem,
            outcome: gather::outcome(&all),
            cost: cost_view(&cost_of(&all), &by_id),
            timeline: gather::timeline(&briefs, &all),
            views: view_texts(store.as_ref(), id, &briefs)?,
        })
    })
    .await?;
    Ok(Json(review))
}

/// A diff as the page shows it: what it is of, its files, the patch.
#[derive(Debug, Serialize)]
pub struct DiffView {
    of: String,
    files: Vec<FileStat>,
    patch: String,
}

impl DiffView {
    fn of(label: String, patch: String) -> Self {
        DiffView {
            of: label,
            files: file_stats(&patch),
            patch,
        }
    }
}

/// `GET /api/runs/{run}/briefs/{brief}`.
#[derive(Debug, Serialize)]
pub struct BriefReview {
    brief: Brief,
    /// What the teachback column says (`not needed` for a brief that only reads).
    teachback: &'static str,
    /// The feedback a retried attempt started from.
    feedback: Option<String>,
    /// Its `failed` and `escalated` events, each with its whole reason.
    failures: Vec<Event>,
    /// The slice's diff as its verifier got it (an implementer's, or a verifier's parent's).
    diff: Option<DiffView>,
    verify: Vec<VerifyRun>,
    judgements: Vec<Judgement>,
    /// Teachbacks sent, reviews and gate denials, oldest first.
    teachback_history: Vec<Event>,
}

/// `GET /api/runs/{run}/briefs/{brief}`: one brief for review.
pub async fn brief_review(
    State(d): State<Dashboard>,
    _: Authorized,
    Path((run, brief)): Path<(String, String)>,
) -> Result<Json<BriefReview>, ApiError> {
    let store = d.store.clone();
    let review = blocking(move || {
        let run = store.resolve_run(&run)?;
        let id = store.resolve_brief(&brief)?;
        let brief = store.get_brief(id)?;
        if brief.run != run {
            return Err(ApiError::not_found(format!(
                "brief {} belongs to run {}, not {}",
                id.short(),
                brief.run.short(),
                run.short()
            )));
        }
        let all = gather::all_events(store.as_ref(), run)?;
        let own: Vec<&Event> = all.iter().filter(|e| e.brief == Some(id)).collect();
        let pick = |kinds: &[EventKind]| -> Vec<Event> {
            own.iter()
                .filter(|e| kinds.contains(&e.kind))
                .map(|e| (*e).clone())
                .collect()
        };
        let feedback = gather::brief_artifact(store.as_ref(), run, id, "feedback")?
            .map(|a| String::from_utf8_lossy(&a.bytes).into_owned());
        // A verifier reviews its parent's slice.
        let implementer = match (brief.tier, brief.parent) {
            (Tier::T5, Some(parent)) => store.get_brief(parent)?,
            _ => brief.clone(),
        };
        let diff = gather::brief_artifact(store.as_ref(), run, implementer.id, "diff")?.map(|a| {
            DiffView::of(
                format!(
                    "slice {}/{} [{}]",
                    implementer.workstream,
                    implementer.title,
                    implementer.id.short()
                ),
                String::from_utf8_lossy(&a.bytes).into_owned(),
            )
        });
        Ok(BriefReview {
            teachback: gather::teachback_label(&brief),
            feedback,
            failures: pick(&[EventKind::Failed, EventKind::Escalated]),
            diff,
            verify: gather::verify_runs(store.as_ref(), &all, &brief),
            judgements: gather::judgements(store.as_ref(), &all, &brief)?,
            teachback_history: pick(&gather::TEACHBACK_KINDS),
            brief,
        })
    })
    .await?;
    Ok(Json(review))
}

/// `GET /api/runs/{run}/diff/{target}`: a workstream's branch (`target` is its id) or the integration
/// branch (`integration`) against the commit the run started from.
pub async fn branch_diff(
    State(d): State<Dashboard>,
    _: Authorized,
    Path((run, target)): Path<(String, String)>,
) -> Result<Json<DiffView>, ApiError> {
    let store = d.store.clone();
    let view = blocking(move || {
        let id = store.resolve_run(&run)?;
        let record = store.get_run(id)?;
        let run8 = id.short();
        let branch = if target == "integration" {
            format!("agency/{run8}/integration")
        } else if store.list_briefs(id)?.iter().any(|b| b.workstream == target) {
            format!("agency/{run8}/{}/work", sanitize_ref_component(&target))
        } else {
            return Err(ApiError::not_found(format!(
                "`{target}` is neither `integration` nor a workstream of run {run8}"
            )));
        };
        let Some(base) = record.base_rev.clone() else {
            return Err(ApiError::not_found(format!(
                "run {run8} recorded no base commit to diff against"
            )));
        };
        let repo = Repo::open(std::path::Path::new(&record.repo), GitOptions::default()).map_err(|e| {
            ApiError::not_found(format!(
                "the run's repository {} cannot be read here: {e}",
                record.repo
            ))
        })?;
        let exists = repo
            .branch_exists(&branch)
            .map_err(|e| ApiError::internal(format!("git: {e}")))?;
        if !exists {
            return Err(ApiError::not_found(format!(
                "branch {branch} does not exist (not made yet, or removed by `agency gc`)"
            )));
        }
        let patch = repo
            .diff(&base, &branch)
            .map_err(|e| ApiError::internal(format!("git diff {base} {branch}: {e}")))?;
        Ok(DiffView::of(
            format!("{branch} against {}", &base[..base.len().min(12)]),
            patch,
        ))
    })
    .await?;
    Ok(Json(view))
}
