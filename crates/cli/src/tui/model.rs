//! What the terminal `inspect` shows, read from the blackboard: the runs, a run's tree of workstreams and
//! briefs, and the text of whatever is selected. Every text comes from the renderers of `agency-review`, the
//! ones `agency show` and the dashboard use, so the three show the same facts in the same words.

use std::collections::BTreeMap;

use agency_core::brief::Brief;
use agency_core::event::Event;
use agency_core::gate::{Gate, GateKind, GateStatus};
use agency_core::tier::Tier;
use agency_core::{BriefId, RunId};
use agency_review::gather::{self, PlanLookup};
use agency_review::{brief as brief_text, cost, diff, plan, signoff, views};
use agency_store::{Blackboard, Run, StoreError};

use crate::render::tree::status_mark;

/// T2's records of a workstream, each shown as the seed's `[view …]` line (one renderer for every surface).
pub use agency_review::views::View as Record;

/// One line of the runs list.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The run.
    pub id: RunId,
    /// Where it stands, as `agency runs` says it.
    pub status: String,
    /// When it was created (UTC, to the minute).
    pub created: String,
    /// Its goal.
    pub goal: String,
    /// Whether its agents run unconfined (`sandbox.mode: off` in the configuration it started with).
    pub sandbox_off: bool,
}

/// The team runs on the blackboard, newest first (goal sign-offs and agent sessions are not runs to inspect).
pub fn runs(store: &dyn Blackboard) -> Result<Vec<RunRow>, StoreError> {
    Ok(store
        .list_runs()?
        .into_iter()
        .filter(|run| crate::commands::attached::run_kind(run) == "team")
        .map(|run| RunRow {
            id: run.id,
            status: crate::commands::attached::status_text(store, &run),
            created: run.created_at.format("%Y-%m-%d %H:%M").to_string(),
            sandbox_off: agency_core::config::sandbox_off_in(&run.config),
            goal: run.goal,
        })
        .collect())
}

/// A line of a run's tree: what can be selected and shown.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// T1's plan.
    Plan,
    /// A workstream's heading.
    Workstream(String),
    /// One of T2's records of a workstream (seed 001's `[view …]` lines).
    Record(String, Record),
    /// A brief.
    Brief(Box<Brief>),
    /// A gate that waits, or one that was rejected.
    Gate(Box<Gate>),
    /// What the run cost.
    Cost,
}

impl Item {
    /// What stays the same about the item between two reads of the blackboard, to keep it selected.
    pub fn key(&self) -> String {
        match self {
            Item::Plan => "plan".into(),
            Item::Workstream(ws) => format!("ws:{ws}"),
            Item::Record(ws, record) => format!("record:{ws}:{}", record.label()),
            Item::Brief(b) => format!("brief:{}", b.id),
            Item::Gate(g) => format!("gate:{}", g.id),
            Item::Cost => "cost".into(),
        }
    }

    /// Its line in the tree, indented by its depth.
    pub fn label(&self) -> String {
        match self {
            Item::Plan => "Plan (T1)  [view workplan]".into(),
            Item::Workstream(ws) => ws.clone(),
            Item::Record(_, record) => format!("  {}", record.label()),
            Item::Brief(b) => {
                let retry = if b.attempt > 0 {
                    format!("  retry {}/{}", b.attempt, b.retry_budget)
                } else {
                    String::new()
                };
                let indent = if b.tier == Tier::T1 { "" } else { "  " };
                format!(
                    "{indent}{} {} {} [{}]{retry}",
                    b.tier.as_str().to_ascii_uppercase(),
                    b.title,
                    status_mark(b.status),
                    b.id.short()
                )
            }
            Item::Gate(g) => match g.status {
                GateStatus::Pending => format!("GATE {}: pending", g.kind),
                GateStatus::Approved => format!("GATE {}: approved", g.kind),
                GateStatus::Rejected => format!("GATE {}: rejected", g.kind),
            },
            Item::Cost => "Cost".into(),
        }
    }
}

/// A run as the terminal shows it.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The run.
    pub run: Run,
    /// Where it stands, as `agency runs` says it.
    pub status: String,
    /// Its tree, flattened: the plan, T1's briefs, each workstream followed by its briefs, gates, the cost.
    pub items: Vec<Item>,
    /// The gate `agency approve` would decide now, if any.
    pub pending: Option<Gate>,
    /// Every event of the run, oldest first.
    pub events: Vec<Event>,
}

/// Reads `run` whole: every event from the first.
pub fn run_view(store: &dyn Blackboard, run: RunId) -> Result<RunView, StoreError> {
    let events = gather::all_events(store, run)?;
    let tree = tree_of(store, run)?;
    Ok(RunView {
        run: tree.run,
        status: tree.status,
        items: tree.items,
        pending: tree.pending,
        events,
    })
}

/// Reads `view`'s run again, its events incrementally: only those after the newest one `view` holds are
/// read and decoded, so a refresh of a run of 10,000 events costs the few written since the last one (and
/// the briefs, gates and artifact names, which are read whole). Returns the view and whether any event was
/// new. On an error `view` keeps what it held (with the new events, if those were read).
pub fn refresh_view(store: &dyn Blackboard, view: &mut RunView) -> Result<bool, StoreError> {
    let last = view.events.last().map_or(0, |e| e.seq);
    let new = store.events_after(Some(view.run.id), last, usize::MAX)?;
    let moved = !new.is_empty();
    view.events.extend(new);
    let tree = tree_of(store, view.run.id)?;
    view.run = tree.run;
    view.status = tree.status;
    view.items = tree.items;
    view.pending = tree.pending;
    Ok(moved)
}

/// A run's tree without its events.
struct Tree {
    run: Run,
    status: String,
    items: Vec<Item>,
    pending: Option<Gate>,
}

/// The run's tree, read from the blackboard.
fn tree_of(store: &dyn Blackboard, run: RunId) -> Result<Tree, StoreError> {
    let run = store.get_run(run)?;
    let status = crate::commands::attached::status_text(store, &run);
    let briefs = store.list_briefs(run.id)?;
    let gates = store.list_gates(run.id)?;
    let artifacts: std::collections::HashSet<String> = store
        .list_artifacts(run.id, None)?
        .into_iter()
        .map(|a| a.name)
        .collect();
    let mut items = vec![Item::Plan];
    items.extend(
        briefs
            .iter()
            .filter(|b| b.tier == Tier::T1)
            .map(|b| Item::Brief(Box::new(b.clone()))),
    );
    // Workstreams in the order of their first brief, tiers in order within each.
    let mut order: Vec<&str> = Vec::new();
    let mut by_ws: BTreeMap<&str, Vec<&Brief>> = BTreeMap::new();
    for brief in briefs.iter().filter(|b| b.tier != Tier::T1) {
        if !by_ws.contains_key(brief.workstream.as_str()) {
            order.push(&brief.workstream);
        }
        by_ws.entry(&brief.workstream).or_default().push(brief);
    }
    for ws in order {
        items.push(Item::Workstream(ws.to_string()));
        for record in Record::ALL {
            if artifacts.contains(&record.artifact(ws)) {
                items.push(Item::Record(ws.to_string(), record));
            }
        }
        let mut list = by_ws.remove(ws).unwrap_or_default();
        list.sort_by_key(|b| (b.tier, b.created_at));
        items.extend(list.into_iter().map(|b| Item::Brief(Box::new(b.clone()))));
    }
    // Decided gates are history; the tree shows what waits, and rejections worth knowing about.
    items.extend(
        gates
            .iter()
            .filter(|g| g.status != GateStatus::Approved)
            .map(|g| Item::Gate(Box::new(g.clone()))),
    );
    items.push(Item::Cost);
    let pending = gates
        .iter()
        .find(|g| g.status == GateStatus::Pending && g.kind != GateKind::Pause)
        .cloned();
    Ok(Tree {
        run,
        status,
        items,
        pending,
    })
}

/// The text shown for `item`, as `agency show` renders the same records.
pub fn detail(store: &dyn Blackboard, view: &RunView, item: &Item) -> Result<String, StoreError> {
    let run8 = view.run.id.short();
    Ok(match item {
        Item::Plan => plan_text(store, &view.run)?,
        Item::Workstream(ws) => {
            let mut out = format!("Workstream {ws}\n\n");
            for item in &view.items {
                if let Item::Brief(b) = item
                    && b.workstream == *ws
                    && b.tier != Tier::T1
                {
                    out.push_str(&format!(
                        "  {} {:<28} {:<10} teachback {}\n",
                        b.tier.as_str().to_ascii_uppercase(),
                        b.title,
                        b.status.as_str(),
                        gather::teachback_label(b)
                    ));
                }
            }
            out.push_str(&format!(
                "\n`agency show {run8} diff {ws}` shows its branch's diff.\n"
            ));
            out
        }
        Item::Record(ws, record) => record_text(store, view, ws, *record)?,
        Item::Brief(brief) => brief_detail(store, view, brief)?,
        Item::Gate(gate) => gate_text(store, view, gate)?,
        Item::Cost => cost_text(store, view)?,
    })
}

fn record_text(
    store: &dyn Blackboard,
    view: &RunView,
    ws: &str,
    record: Record,
) -> Result<String, StoreError> {
    let text = views::read(store, view.run.id, ws, record)?;
    Ok(views::render(record, ws, text.as_deref()))
}

fn plan_text(store: &dyn Blackboard, run: &Run) -> Result<String, StoreError> {
    Ok(match gather::plan_of(store, run)? {
        PlanLookup::Found(_, plan) => plan::render_plan(&run.id.short(), &plan),
        PlanLookup::Invalid(problem) => format!("The plan does not validate: {problem}\n"),
        PlanLookup::NotYet => "No plan yet: T1 is still planning, or failed before it wrote one.\n".into(),
    })
}

/// A brief whole, then its teachback, verify runs, the judge's verdict and its slice's diff.
fn brief_detail(store: &dyn Blackboard, view: &RunView, brief: &Brief) -> Result<String, StoreError> {
    let run = view.run.id;
    let own: Vec<Event> = view
        .events
        .iter()
        .filter(|e| e.brief == Some(brief.id))
        .cloned()
        .collect();
    let feedback = gather::brief_artifact(store, run, brief.id, "feedback")?
        .map(|a| String::from_utf8_lossy(&a.bytes).into_owned());
    let mut out = brief_text::render_brief(brief, feedback.as_deref(), &own);

    out.push_str("\n── Teachback ──\n");
    let history: Vec<Event> = own
        .iter()
        .filter(|e| gather::TEACHBACK_KINDS.contains(&e.kind))
        .cloned()
        .collect();
    out.push_str(&brief_text::render_teachback(brief, &history));

    out.push_str("\n── Verify ──\n");
    let runs = gather::verify_runs(store, &view.events, brief);
    if runs.is_empty() {
        out.push_str("no verify run recorded\n");
    }
    for verify in &runs {
        out.push_str(&signoff::render_verify(
            &verify.event.payload,
            verify.output.as_deref(),
        ));
    }

    out.push_str("\n── Judge ──\n");
    let judgements = gather::judgements(store, &view.events, brief)?;
    if judgements.is_empty() {
        out.push_str("no sign-off recorded yet\n");
    }
    for judgement in &judgements {
        out.push_str(&signoff::render_judge(
            judgement.event.kind,
            &judgement.event.payload,
            judgement.transcript.as_deref(),
        ));
    }

    out.push_str("\n── Diff ──\n");
    // A verifier reviews its parent's slice.
    let implementer: BriefId = match (brief.tier, brief.parent) {
        (Tier::T5, Some(parent)) => parent,
        _ => brief.id,
    };
    match gather::brief_artifact(store, run, implementer, "diff")? {
        Some(artifact) => {
            let patch = String::from_utf8_lossy(&artifact.bytes);
            out.push_str(&diff::render_summary(&diff::file_stats(&patch)));
            out.push('\n');
            out.push_str(&diff::render_patch(&patch, false));
        }
        None => out
            .push_str("no slice diff: only an implementer whose commit passed its verify command has one\n"),
    }
    Ok(out)
}

fn gate_text(store: &dyn Blackboard, view: &RunView, gate: &Gate) -> Result<String, StoreError> {
    let run8 = view.run.id.short();
    let mut out = format!(
        "Gate {} — {} since {}\n",
        gate.kind,
        gate.status.as_str(),
        gate.opened_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    if let Some(by) = &gate.decided_by {
        out.push_str(&format!("decided by {by}\n"));
    }
    if let Some(note) = &gate.note {
        out.push_str(&format!("note: {note}\n"));
    }
    if agency_core::config::sandbox_off_in(&view.run.config) {
        out.push_str(&format!("\n{}\n", agency_core::config::SANDBOX_OFF_BANNER));
    }
    if let Some(message) = gate.summary.get("message").and_then(|m| m.as_str()) {
        out.push_str(&format!("\n{message}\n"));
    }
    if gate.status == GateStatus::Pending {
        out.push_str("\nDecide here with a (approve) or r (reject), or with:\n");
        for command in agency_review::decision_commands(&run8, gate.kind) {
            out.push_str(&format!("  {command}\n"));
        }
        out.push_str(&format!("Rejecting it: {}\n", gate.kind.on_reject()));
    }
    match gate.kind {
        GateKind::T1Plan => {
            out.push('\n');
            out.push_str(&plan_text(store, &view.run)?);
        }
        GateKind::Budget => {
            out.push('\n');
            out.push_str(&cost_text(store, view)?);
        }
        _ => {
            let summary = serde_json::to_string_pretty(&gate.summary).unwrap_or_default();
            out.push_str(&format!("\nSummary:\n{summary}\n"));
        }
    }
    Ok(out)
}

fn cost_text(store: &dyn Blackboard, view: &RunView) -> Result<String, StoreError> {
    let spent = cost::cost_of(&view.events);
    let briefs: BTreeMap<BriefId, Brief> = store
        .list_briefs(view.run.id)?
        .into_iter()
        .map(|b| (b.id, b))
        .collect();
    Ok(format!(
        "Cost of run {}\n{}",
        view.run.id.short(),
        cost::render_cost(&spent, |id| cost::brief_label(&briefs, id))
    ))
}
