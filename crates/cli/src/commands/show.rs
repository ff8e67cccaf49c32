//! `agency show <run> [plan | architecture <ws> | boundaries <ws> | assumptions <ws> | brief <id> | diff
//! <ws|brief|integration> | verify <brief> | judge <brief> | teachback <brief> | cost]`: what a human
//! approves, read from the blackboard and rendered by [`crate::render::review`]; `--json` prints the records
//! instead. Agent-written text is printed through [`views::terminal_text`], so an escape sequence in it
//! reaches the terminal as text.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use agency_core::brief::Brief;
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::gate::{Gate, GateKind, GateStatus};
use agency_core::plan::Plan;
use agency_core::{BriefId, RunId, Tier};
use agency_exec::{GitOptions, Repo, sanitize_ref_component};
use agency_store::{Artifact, Blackboard, Run};
use serde_json::{Value, json};

use crate::commands::{Context, resolve_run};
use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::render::review::gather::{self, PlanLookup};
use crate::render::review::views::{self, View};
use crate::render::review::{self, brief, cost, diff, plan, signoff};

/// `agency show <run> [what] [--json]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end.
    pub run: String,
    /// What to show (the plan when not given).
    #[command(subcommand)]
    pub what: Option<What>,
    /// Print the records as JSON, for scripts.
    #[arg(long, global = true)]
    pub json: bool,
}

/// What of the run to show.
#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// T1's plan: workstreams with tier path, variety, done_when, verify, failure modes, may_edit; the order
    /// of the parallel groups; the plan gate and how to decide it.
    Plan,
    /// T2's canonical architecture of a workstream (the seed's `[view canonical architecture]`).
    Architecture {
        /// The workstream's id, as the plan names it.
        workstream: String,
    },
    /// T2's domain boundaries of a workstream, then its shared assumptions (`[view domain boundaries]`,
    /// `[view shared assumptions]`: one record holds both).
    Boundaries {
        /// The workstream's id, as the plan names it.
        workstream: String,
    },
    /// T2's shared assumptions of a workstream alone (`[view shared assumptions]`).
    Assumptions {
        /// The workstream's id, as the plan names it.
        workstream: String,
    },
    /// One brief whole: its instructions, contract, the feedback it started from and why it failed.
    Brief {
        /// The brief: short or full id, or any unique part at either end.
        id: String,
    },
    /// A diff with a file summary: a brief's slice, a workstream's branch or the integration branch, each
    /// against the commit the run started from (a slice against its workstream's branch).
    Diff {
        /// `integration`, a workstream id, or a brief id.
        target: String,
    },
    /// The verify runs of a slice (stage 1): command, how it ended, the tail of its output.
    Verify {
        /// The implementer's or its verifier's brief (T1's acceptance brief for the integration branch).
        brief: String,
    },
    /// The judge's verdict and account of a slice (stage 2), with its transcript.
    Judge {
        /// The verifier's brief, or its implementer's.
        brief: String,
    },
    /// A brief's teachback with its review history.
    Teachback {
        /// The brief.
        brief: String,
    },
    /// Tokens and dollars per tier and per brief.
    Cost,
}

/// Runs `agency show`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let run_id = resolve_run(&*store, &args.run)?;
    let run = store.get_run(run_id)?;
    let json = args.json;
    match args.what.unwrap_or(What::Plan) {
        What::Plan => show_plan(&*store, &run, json),
        What::Architecture { workstream } => {
            show_views(&*store, &run, &workstream, &[View::Architecture], json)
        }
        What::Boundaries { workstream } => show_views(
            &*store,
            &run,
            &workstream,
            &[View::Boundaries, View::Assumptions],
            json,
        ),
        What::Assumptions { workstream } => {
            show_views(&*store, &run, &workstream, &[View::Assumptions], json)
        }
        What::Brief { id } => show_brief(&*store, &run, &id, json),
        What::Diff { target } => show_diff(ctx, &*store, &run, &target, json),
        What::Verify { brief } => show_verify(&*store, &run, &brief, json),
        What::Judge { brief } => show_judge(&*store, &run, &brief, json),
        What::Teachback { brief } => show_teachback(&*store, &run, &brief, json),
        What::Cost => show_cost(&*store, &run, json),
    }
}

fn print_json(value: &Value) -> CommandResult {
    let text = serde_json::to_string_pretty(value)?;
    println!("{text}");
    Ok(())
}

/// Prints rendered text that carries agent-written strings, with their escapes made visible.
fn print_text(text: &str) {
    print!("{}", views::terminal_text(text));
}

fn nothing(message: String) -> CommandError {
    CommandError::new(ErrorKind::NothingToDo, message)
}

/// Whether stdout takes colour: a terminal, and `NO_COLOR` unset (https://no-color.org).
fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn all_events(store: &dyn Blackboard, run: RunId) -> CommandResult<Vec<Event>> {
    Ok(store.events_after(Some(run), 0, usize::MAX)?)
}

fn events_of(store: &dyn Blackboard, run: RunId, brief: BriefId) -> CommandResult<Vec<Event>> {
    Ok(all_events(store, run)?
        .into_iter()
        .filter(|e| e.brief == Some(brief))
        .collect())
}

/// The brief the user named, which must be of `run`.
fn brief_of_run(store: &dyn Blackboard, run: &Run, typed: &str) -> CommandResult<Brief> {
    let id = store.resolve_brief(typed)?;
    let brief = store.get_brief(id)?;
    if brief.run != run.id {
        return Err(CommandError::new(
            ErrorKind::NotFound,
            format!(
                "brief {} belongs to run {}, not {}",
                id.short(),
                brief.run.short(),
                run.id.short()
            ),
        ));
    }
    Ok(brief)
}

/// The newest artifact of `brief` whose name is `kind/<id>` (or the short form an earlier build wrote).
fn brief_artifact(
    store: &dyn Blackboard,
    run: RunId,
    brief: BriefId,
    kind: &str,
) -> CommandResult<Option<Artifact>> {
    Ok(gather::brief_artifact(store, run, brief, kind)?)
}

fn artifact_by_id(store: &dyn Blackboard, id: Option<&str>) -> Option<Artifact> {
    gather::artifact_by_id(store, id)
}

/// The plan T1 wrote: its newest plan brief with an output that validates.
fn plan_of(store: &dyn Blackboard, run: &Run) -> CommandResult<(Brief, Plan)> {
    match gather::plan_of(store, run)? {
        PlanLookup::Found(planner, plan) => Ok((*planner, *plan)),
        PlanLookup::Invalid(problem) => Err(CommandError::input(format!(
            "run {}'s plan does not validate: {problem}",
            run.id.short()
        ))),
        PlanLookup::NotYet => Err(nothing(format!(
            "run {} has no plan yet (T1 is still planning, or failed before it wrote one)",
            run.id.short()
        ))
        .hint(format!("`agency watch {}` shows where it is", run.id.short()))),
    }
}

fn gate_line(gate: &Gate) -> String {
    let by = gate.decided_by.as_deref().unwrap_or("?");
    match gate.status {
        GateStatus::Pending => format!(
            "Gate {}: waiting for a decision since {}",
            gate.kind,
            gate.opened_at.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        GateStatus::Approved => format!("Gate {}: approved by {by}", gate.kind),
        GateStatus::Rejected => format!(
            "Gate {}: rejected by {by} — {}",
            gate.kind,
            gate.note.as_deref().unwrap_or("no reason given")
        ),
    }
}

fn show_plan(store: &dyn Blackboard, run: &Run, json: bool) -> CommandResult {
    let (planner, plan) = plan_of(store, run)?;
    let gate = store
        .list_gates_of_kind(run.id, GateKind::T1Plan)?
        .into_iter()
        .rev()
        .find(|g| g.brief == Some(planner.id));
    let run8 = run.id.short();
    let decide = match &gate {
        Some(g) if g.status == GateStatus::Pending => review::decision_commands(&run8, g.kind),
        _ => Vec::new(),
    };
    let sandbox_off = agency_core::config::sandbox_off_in(&run.config);
    // The path amendments proposed since, each with its decision (docs/protocols.md, "Path amendments").
    let amended = agency_engine::amendments::recorded(store, run.id)
        .map_err(|e| CommandError::new(ErrorKind::Internal, format!("the run's path amendments: {e}")))?;
    if json {
        let amendments: Vec<Value> = amended
            .iter()
            .map(|r| json!({ "seq": r.seq, "line": r.line(), "status": r.status_line() }))
            .collect();
        return print_json(&json!({
            "run": run.id, "brief": planner.id, "plan": plan, "gate": gate, "decide": decide,
            "sandbox_off": sandbox_off, "amendments": amendments,
        }));
    }
    print_text(&plan::render_plan(&run8, &plan));
    if let Some(gate) = &gate {
        println!();
        print_text(&format!("{}\n", gate_line(gate)));
        if sandbox_off {
            println!("{}", agency_core::config::SANDBOX_OFF_BANNER);
        }
        for command in &decide[1..] {
            println!("  {command}");
        }
    }
    if !amended.is_empty() {
        println!("\nPath amendments:");
        for r in &amended {
            println!("  {} — {}", r.line(), r.status_line());
        }
    }
    Ok(())
}

/// `show <run> architecture|boundaries|assumptions <ws>`: T2's records of a workstream, each through the
/// renderer the terminal `inspect` and the dashboard use.
fn show_views(
    store: &dyn Blackboard,
    run: &Run,
    workstream: &str,
    shown: &[View],
    json: bool,
) -> CommandResult {
    let run8 = run.id.short();
    let mut known: Vec<String> = store
        .list_briefs(run.id)?
        .into_iter()
        .filter(|b| b.tier != Tier::T1)
        .map(|b| b.workstream)
        .collect();
    if let PlanLookup::Found(_, plan) = gather::plan_of(store, run)? {
        known.extend(plan.workstreams.into_iter().map(|ws| ws.id));
    }
    known.sort();
    known.dedup();
    if !known.iter().any(|ws| ws == workstream) {
        let named = if known.is_empty() {
            "it has none yet".to_string()
        } else {
            format!("its workstreams: {}", known.join(", "))
        };
        return Err(CommandError::new(
            ErrorKind::NotFound,
            format!("run {run8} has no workstream `{workstream}` ({named})"),
        )
        .hint(format!("`agency show {run8} plan` lists the workstreams")));
    }
    let mut records = Vec::new();
    for view in shown {
        let text = views::read(store, run.id, workstream, *view)?;
        records.push((*view, text));
    }
    if records.iter().all(|(_, text)| text.is_none()) {
        let view = shown[0];
        return Err(nothing(format!(
            "run {run8} has no {} recorded: T2 writes it while it designs the workstream (a workstream whose \
             tier path starts below T2 has none)",
            view.artifact(workstream)
        ))
        .hint(format!("`agency watch {run8}` shows where the run is")));
    }
    if json {
        let values = records
            .iter()
            .map(|(view, text)| views::record_json(*view, workstream, text.as_deref()))
            .collect::<Result<Vec<Value>, String>>()
            .map_err(CommandError::input)?;
        return print_json(&json!({ "run": run.id, "views": values }));
    }
    for (i, (view, text)) in records.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print_text(&views::render(*view, workstream, text.as_deref()));
    }
    Ok(())
}

fn show_brief(store: &dyn Blackboard, run: &Run, typed: &str, json: bool) -> CommandResult {
    let brief = brief_of_run(store, run, typed)?;
    let feedback = brief_artifact(store, run.id, brief.id, "feedback")?
        .map(|a| String::from_utf8_lossy(&a.bytes).into_owned());
    let events = events_of(store, run.id, brief.id)?;
    if json {
        let failures: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Failed | EventKind::Escalated))
            .collect();
        return print_json(&json!({ "brief": brief, "feedback": feedback, "failures": failures }));
    }
    print_text(&brief::render_brief(&brief, feedback.as_deref(), &events));
    Ok(())
}

/// What a diff target names.
enum DiffOf {
    /// A branch against the run's base commit.
    Branch(String),
    /// A slice's diff as its verifier got it: what it is, and the patch.
    Slice(String, String),
}

fn diff_target(store: &dyn Blackboard, run: &Run, target: &str) -> CommandResult<DiffOf> {
    let run8 = run.id.short();
    if target == "integration" {
        return Ok(DiffOf::Branch(format!("agency/{run8}/integration")));
    }
    let briefs = store.list_briefs(run.id)?;
    if briefs.iter().any(|b| b.workstream == target) {
        // As `RunBranches::workstream` names it.
        return Ok(DiffOf::Branch(format!(
            "agency/{run8}/{}/work",
            sanitize_ref_component(target)
        )));
    }
    let brief = brief_of_run(store, run, target).map_err(|e| {
        CommandError::new(
            ErrorKind::NotFound,
            format!(
                "`{target}` names no diff of run {run8}: it is not `integration`, not one of its workstreams, \
                 and not one of its briefs ({})",
                e.message
            ),
        )
        .hint(format!("`agency show {run8} plan` lists the workstreams; `agency inspect {run8}` the briefs"))
    })?;
    // A verifier reviews its parent's slice.
    let implementer = match (brief.tier, brief.parent) {
        (Tier::T5, Some(parent)) => store.get_brief(parent)?,
        _ => brief.clone(),
    };
    match brief_artifact(store, run.id, implementer.id, "diff")? {
        Some(artifact) => Ok(DiffOf::Slice(
            format!(
                "slice {}/{} [{}]",
                implementer.workstream,
                implementer.title,
                implementer.id.short()
            ),
            String::from_utf8_lossy(&artifact.bytes).into_owned(),
        )),
        None => Err(nothing(format!(
            "brief {} has no slice diff: only an implementer whose commit passed its verify command has one",
            brief.id.short()
        ))
        .hint(format!(
            "`agency show {run8} brief {}` says what became of it",
            brief.id.short()
        ))),
    }
}

fn show_diff(ctx: &Context, store: &dyn Blackboard, run: &Run, target: &str, json: bool) -> CommandResult {
    let (label, patch) = match diff_target(store, run, target)? {
        DiffOf::Slice(label, patch) => (label, patch),
        DiffOf::Branch(branch) => {
            let Some(base) = run.base_rev.clone() else {
                return Err(nothing(format!(
                    "run {} recorded no base commit to diff against",
                    run.id.short()
                )));
            };
            let ws = ctx.workspace()?;
            let repo = Repo::open(&ws.root, GitOptions::default())
                .map_err(|e| CommandError::input(e.to_string()))?;
            if !repo.branch_exists(&branch)? {
                return Err(nothing(format!(
                    "branch {branch} does not exist (not made yet, or removed by `agency gc`)"
                )));
            }
            let patch = repo
                .diff(&base, &branch)
                .map_err(|e| CommandError::internal(format!("git diff {base} {branch}: {e}")))?;
            (format!("{branch} against {}", &base[..base.len().min(12)]), patch)
        }
    };
    let files = diff::file_stats(&patch);
    if json {
        return print_json(&json!({ "of": label, "files": files, "patch": patch }));
    }
    print_text(&format!("{label}\n{}", diff::render_summary(&files)));
    if !patch.is_empty() {
        println!();
        // The colours are added after the escapes in the patch were made visible.
        print!("{}", diff::render_patch(&views::terminal_text(&patch), colour()));
    }
    Ok(())
}

/// The events of `kinds` recorded on `brief`, or else on the briefs `related` gives (a verifier's parent, an
/// implementer's verifiers).
fn signoff_events(
    store: &dyn Blackboard,
    run: &Run,
    brief: &Brief,
    kinds: &[EventKind],
    related: fn(&Brief) -> Vec<BriefId>,
    children: &[Brief],
) -> CommandResult<Vec<Event>> {
    let all = all_events(store, run.id)?;
    let mut ids = related(brief);
    ids.extend(children.iter().map(|c| c.id));
    Ok(gather::signoff_events(&all, brief.id, &ids, kinds))
}

fn show_verify(store: &dyn Blackboard, run: &Run, typed: &str, json: bool) -> CommandResult {
    let brief = brief_of_run(store, run, typed)?;
    // A verifier's slice was verified when its implementer committed.
    let parent = |b: &Brief| b.parent.into_iter().collect();
    let events = signoff_events(store, run, &brief, &[EventKind::SignoffVerify], parent, &[])?;
    if events.is_empty() {
        return Err(nothing(format!(
            "no verify run recorded for brief {} ({} {})",
            brief.id.short(),
            brief.tier,
            brief.title
        )));
    }
    let outputs: Vec<Option<String>> = events
        .iter()
        .map(|e| {
            let artifact = match e.typed() {
                Ok(EventPayload::SignoffVerify(verify)) => verify.artifact,
                _ => None,
            };
            artifact_by_id(store, artifact.as_deref())
                .and_then(|a| serde_json::from_slice::<Value>(&a.bytes).ok())
                .and_then(|v| v.get("tail").and_then(Value::as_str).map(str::to_string))
        })
        .collect();
    if json {
        let runs: Vec<Value> = events
            .iter()
            .zip(&outputs)
            .map(|(e, output)| json!({ "event": e, "output": output }))
            .collect();
        return print_json(&json!({ "brief": brief.id, "verify": runs }));
    }
    for (i, (event, output)) in events.iter().zip(&outputs).enumerate() {
        if i > 0 {
            println!();
        }
        print_text(&signoff::render_verify(&event.payload, output.as_deref()));
    }
    Ok(())
}

/// A slice's sign-off outcomes and its auditor's reviews.
const OUTCOMES: [EventKind; 4] = gather::JUDGEMENTS;

fn show_judge(store: &dyn Blackboard, run: &Run, typed: &str, json: bool) -> CommandResult {
    let brief = brief_of_run(store, run, typed)?;
    // An implementer's slice is judged by its verifier, a child brief.
    let children: Vec<Brief> = store
        .list_children(brief.id)?
        .into_iter()
        .filter(|c| c.tier == Tier::T5)
        .collect();
    let events = signoff_events(store, run, &brief, &OUTCOMES, |_| Vec::new(), &children)?;
    if events.is_empty() {
        return Err(nothing(format!(
            "no sign-off recorded for brief {} ({} {}) yet",
            brief.id.short(),
            brief.tier,
            brief.title
        )));
    }
    let transcripts: Vec<Option<String>> = events
        .iter()
        .map(|e| {
            let artifact = match e.typed() {
                Ok(
                    EventPayload::SignoffAccepted(outcome)
                    | EventPayload::SignoffRejected(outcome)
                    | EventPayload::SignoffInconclusive(outcome),
                ) => outcome.judge_artifact,
                Ok(EventPayload::SignoffAudit(audit)) => audit.transcript,
                _ => None,
            };
            artifact_by_id(store, artifact.as_deref()).map(|a| String::from_utf8_lossy(&a.bytes).into_owned())
        })
        .collect();
    if json {
        let signoffs: Vec<Value> = events
            .iter()
            .zip(&transcripts)
            .map(|(e, t)| json!({ "event": e, "transcript": t }))
            .collect();
        return print_json(&json!({ "brief": brief.id, "signoffs": signoffs }));
    }
    for (i, (event, transcript)) in events.iter().zip(&transcripts).enumerate() {
        if i > 0 {
            println!();
        }
        print_text(&signoff::render_judge(
            event.kind,
            &event.payload,
            transcript.as_deref(),
        ));
    }
    Ok(())
}

fn show_teachback(store: &dyn Blackboard, run: &Run, typed: &str, json: bool) -> CommandResult {
    let brief = brief_of_run(store, run, typed)?;
    let events: Vec<Event> = events_of(store, run.id, brief.id)?
        .into_iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::TeachbackSubmitted
                    | EventKind::TeachbackApproved
                    | EventKind::TeachbackCorrected
                    | EventKind::TeachbackDenied
            )
        })
        .collect();
    if json {
        return print_json(&json!({ "brief": brief.id, "state": brief.teachback, "history": events }));
    }
    print_text(&brief::render_teachback(&brief, &events));
    Ok(())
}

fn show_cost(store: &dyn Blackboard, run: &Run, json: bool) -> CommandResult {
    let spent = cost::cost_of(&all_events(store, run.id)?);
    if json {
        return print_json(&json!(spent));
    }
    let briefs: BTreeMap<BriefId, Brief> = store
        .list_briefs(run.id)?
        .into_iter()
        .map(|b| (b.id, b))
        .collect();
    println!("Cost of run {}", run.id.short());
    print_text(&cost::render_cost(&spent, |id| cost::brief_label(&briefs, id)));
    Ok(())
}
