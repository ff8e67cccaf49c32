//! `agency inspect [<run>]`: in a terminal, the interactive inspector ([`crate::tui`]); otherwise (a pipe, a
//! file, `--plain`) the run as a tree. `--tier` lists one tier's briefs and artifacts; `--brief` shows one
//! brief whole with its events; `--json` prints the underlying records.

use std::io::IsTerminal;

use agency_core::tier::Tier;
use agency_store::Blackboard;

use crate::commands::{Context, resolve_run};
use crate::error::{CommandError, CommandResult};
use crate::render::log::{Level, render_event};
use crate::render::tree::{RunHeader, render_tree, status_mark};

/// `agency inspect [<run>] [--tier T] [--brief ID] [--json] [--plain]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its short or full id, or any unique part at either end. In a terminal it may be left out:
    /// the inspector opens on the list of runs.
    pub run: Option<String>,
    /// Only this tier (t1..t5).
    #[arg(long)]
    pub tier: Option<String>,
    /// One brief, by short or full id, or any unique part at either end.
    #[arg(long)]
    pub brief: Option<String>,
    /// List every implementer and verifier instead of summarising them.
    #[arg(long)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Print the tree even in a terminal, instead of opening the interactive inspector.
    #[arg(long)]
    pub plain: bool,
}

impl Args {
    /// Whether to open the interactive inspector: both ends are a terminal and nothing asks for print.
    fn interactive(&self) -> bool {
        !(self.plain || self.json || self.all || self.tier.is_some() || self.brief.is_some())
            && std::io::stdout().is_terminal()
            && std::io::stdin().is_terminal()
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> CommandResult<String> {
    Ok(serde_json::to_string_pretty(value)?)
}

/// Runs `agency inspect`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store = ctx.open_store()?;
    let interactive = args.interactive();
    let run_id = match &args.run {
        Some(typed) => Some(resolve_run(&*store, typed)?),
        None => None,
    };
    if interactive {
        return crate::tui::run(ctx, store, run_id);
    }
    let Some(run_id) = run_id else {
        return Err(CommandError::new(
            crate::error::ErrorKind::Usage,
            "inspect needs a run when its output is not a terminal",
        )
        .hint("`agency runs` lists them"));
    };
    let run = store.get_run(run_id)?;
    if let Some(prefix) = &args.brief {
        return inspect_brief(&*store, run_id, prefix, args.json);
    }
    let tier = match &args.tier {
        Some(text) => Some(
            text.parse::<Tier>()
                .map_err(|e| CommandError::input(format!("--tier: {e}")))?,
        ),
        None => None,
    };
    let briefs: Vec<_> = store
        .list_briefs(run_id)?
        .into_iter()
        .filter(|b| tier.is_none_or(|t| b.tier == t))
        .collect();
    let gates = store.list_gates(run_id)?;
    if args.json {
        let out = serde_json::json!({ "run": run, "briefs": briefs, "gates": gates });
        println!("{}", to_json(&out)?);
        return Ok(());
    }
    if let Some(tier) = tier {
        println!(
            "Run {} — {} briefs",
            run.id.short(),
            tier.as_str().to_ascii_uppercase()
        );
        for brief in &briefs {
            println!(
                "  {}  {:<24} {:<10} {}  teachback {}",
                brief.id.short(),
                agency_review::views::terminal_text(&brief.title),
                brief.status.as_str(),
                status_mark(brief.status),
                agency_review::gather::teachback_label(brief)
            );
        }
        for artifact in store.list_artifacts(run_id, None)? {
            if briefs.iter().any(|b| Some(b.id) == artifact.brief)
                || tier == Tier::T1 && artifact.brief.is_none()
            {
                println!(
                    "  artifact {} ({} bytes)",
                    agency_review::views::terminal_text(&artifact.name),
                    artifact.size
                );
            }
        }
        return Ok(());
    }
    let status = crate::commands::attached::status_text(&*store, &run);
    let unattached = status.ends_with("(no runner attached)");
    let header = RunHeader {
        id: run.id,
        goal: run.goal.clone(),
        status,
    };
    // T2's records, listed with the command that prints each.
    let names: std::collections::HashSet<String> = store
        .list_artifacts(run.id, None)?
        .into_iter()
        .map(|a| a.name)
        .collect();
    let mut views = crate::render::tree::TreeViews {
        // As `agency show <run> plan` finds it.
        plan_written: matches!(
            agency_review::gather::plan_of(&*store, &run)?,
            agency_review::gather::PlanLookup::Found(..)
        ),
        ..Default::default()
    };
    for brief in briefs.iter().filter(|b| b.tier != Tier::T1) {
        if views.records.contains_key(&brief.workstream) {
            continue;
        }
        let found: Vec<_> = agency_review::views::View::ALL
            .into_iter()
            .filter(|view| names.contains(&view.artifact(&brief.workstream)))
            .collect();
        views.records.insert(brief.workstream.clone(), found);
    }
    print!(
        "{}",
        // Titles and goals are agent- or user-written: their escapes are shown, not obeyed.
        agency_review::views::terminal_text(&render_tree(&header, &briefs, &gates, &views, args.all))
    );
    if unattached {
        println!(
            "no runner drives this run: `{}` resumes it, `agency cancel {}` ends it",
            crate::commands::attached::resume_command(&*store, run.id),
            run.id.short()
        );
    }
    Ok(())
}

fn inspect_brief(store: &dyn Blackboard, run: agency_core::RunId, prefix: &str, json: bool) -> CommandResult {
    let id = store.resolve_brief(prefix)?;
    let brief = store.get_brief(id)?;
    if brief.run != run {
        return Err(CommandError::new(
            crate::error::ErrorKind::NotFound,
            format!(
                "brief {} belongs to run {}, not {}",
                id.short(),
                brief.run.short(),
                run.short()
            ),
        ));
    }
    let events: Vec<_> = store
        .events_after(Some(run), 0, usize::MAX)?
        .into_iter()
        .filter(|e| e.brief == Some(id))
        .collect();
    let calibration = calibration_of(store, run, id)?;
    if json {
        println!(
            "{}",
            to_json(&serde_json::json!({ "brief": brief, "events": events, "calibration": calibration }))?
        );
        return Ok(());
    }
    println!("{}", to_json(&brief)?);
    if let Some(gates) = brief.gates() {
        println!(
            "derived gates: teachback {}, auditor {}, route {}",
            gates.teachback_mode.as_str(),
            if gates.auditor_required {
                "required (audited at sign-off)"
            } else {
                "optional"
            },
            gates.workflow_route
        );
    }
    if let Some(record) = &calibration {
        let dims =
            |v: &agency_core::Variety| format!("{}/{}/{}/{}", v.novelty, v.scope, v.uncertainty, v.risk);
        println!(
            "variety (novelty/scope/uncertainty/risk): predicted {}, used {} (Learning II, domain {}){}",
            dims(&record.variety_dimensions),
            dims(&record.calibrated),
            record.domain,
            if record.why.is_empty() {
                ": no drift".to_string()
            } else {
                format!(": {}", record.why.join("; "))
            }
        );
    }
    // Which runner ran it (`agency worker`s on other machines included), each claim in turn.
    let runners: Vec<String> = events
        .iter()
        .filter(|e| e.kind == agency_core::event::EventKind::BriefStatus)
        .filter_map(|e| match e.typed() {
            Ok(agency_core::event::EventPayload::BriefStatus(change)) if change.to == "running" => {
                change.claimed_by
            }
            _ => None,
        })
        .collect();
    if !runners.is_empty() {
        println!("ran on: {}", runners.join(", then "));
    }
    // A failed implementer's worktree kept for a look (`runner.keep_worktrees_on_failure`) until `agency gc`.
    if let Some(path) = brief
        .worktree
        .as_deref()
        .filter(|p| std::path::Path::new(p).exists())
        && matches!(
            brief.status,
            agency_core::BriefStatus::Failed | agency_core::BriefStatus::Escalated
        )
    {
        println!("worktree kept: {path}");
    }
    println!("events:");
    for event in &events {
        if let Some(line) = render_event(event, Level::Verbose) {
            println!("  {}", agency_review::views::terminal_text(&line));
        }
    }
    Ok(())
}

/// The brief's Learning II record (`calibration/<brief>`), when it was scored by calibration.
fn calibration_of(
    store: &dyn Blackboard,
    run: agency_core::RunId,
    brief: agency_core::BriefId,
) -> CommandResult<Option<agency_core::calibration::Calibrated>> {
    let name = agency_engine::calibration::calibration_name(brief);
    let Some(artifact) = store.latest_artifact(run, &name)? else {
        return Ok(None);
    };
    serde_json::from_slice(&artifact.bytes).map(Some).map_err(|e| {
        CommandError::internal(format!(
            "artifact {name} does not read as a calibration record: {e}"
        ))
    })
}
