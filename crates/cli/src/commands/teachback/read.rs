//! The reading verbs: `show`, `list`, `report` (denials per brief and tool, for calibrating a rollout) and
//! `check` (raises due stall ALERTs; the one writer here, safe to run on every poll).

use std::collections::BTreeMap;

use agency_core::event::EventPayload;
use agency_core::teachback::ReviewVerdict;
use agency_core::{Brief, Event, EventKind};
use agency_store::{Blackboard, RunStatus};
use chrono::Utc;

use super::resolve_brief;
use crate::commands::{Context, resolve_run};
use crate::error::CommandResult;
use crate::hook::raise_due;

/// `agency teachback show [<brief>]`
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The brief (default: $AGENCY_BRIEF).
    pub brief: Option<String>,
}

/// `agency teachback list [--run R]`
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only this run's briefs.
    #[arg(long)]
    pub run: Option<String>,
}

/// `agency teachback report [--run R]`
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Only this run.
    #[arg(long)]
    pub run: Option<String>,
}

/// `agency teachback check [--at TIME]`
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Judge the timeouts as of this time (RFC 3339) instead of now, e.g. to replay a past poll.
    #[arg(long, value_name = "TIME")]
    pub at: Option<chrono::DateTime<Utc>>,
}

fn mode_name(brief: &Brief) -> &'static str {
    brief.teachback_mode().as_str()
}

fn all_events(store: &dyn Blackboard, run: Option<agency_core::RunId>) -> CommandResult<Vec<Event>> {
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(run, after, 1000)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        all.extend(page);
    }
    Ok(all)
}

/// Runs `agency teachback show`.
pub fn show(ctx: &Context, args: ShowArgs) -> CommandResult {
    let store = ctx.open_store()?;
    let id = resolve_brief(&*store, args.brief.as_deref())?;
    let brief = store.get_brief(id)?;
    println!("brief      {} {}", brief.id, brief.title);
    println!("state      {}", agency_review::gather::teachback_label(&brief));
    let score = brief
        .variety_score()
        .map_or("none".to_string(), |s| s.to_string());
    println!("mode       {} (variety {score})", mode_name(&brief));
    let events: Vec<Event> = all_events(&*store, Some(brief.run))?
        .into_iter()
        .filter(|e| e.brief == Some(brief.id))
        .collect();
    if let Some(sent) = events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::TeachbackSubmitted)
    {
        println!("teachback  sent {}", sent.ts.format("%Y-%m-%d %H:%M:%S UTC"));
        let text = match sent.typed() {
            Ok(EventPayload::TeachbackSubmitted(submitted)) => submitted.text.unwrap_or_default(),
            _ => "(the submission's record does not read)".to_string(),
        };
        for line in text.lines() {
            println!("  {line}");
        }
    }
    let review = events.iter().rev().find(|e| {
        matches!(
            e.kind,
            EventKind::TeachbackApproved | EventKind::TeachbackCorrected
        )
    });
    if let Some(review) = review {
        match review.typed() {
            Ok(EventPayload::TeachbackApproved(review) | EventPayload::TeachbackCorrected(review)) => {
                let by = Some(review.reviewer.as_str())
                    .filter(|r| !r.is_empty())
                    .unwrap_or("?");
                match &review.verdict {
                    Some(ReviewVerdict::Corrections(items)) => {
                        println!("review     corrections by {by}");
                        for item in items {
                            println!("  - {item}");
                        }
                    }
                    Some(ReviewVerdict::Approved) | None => println!("review     approved by {by}"),
                }
                if let Some(note) = &review.note {
                    println!("note       {note}");
                }
            }
            _ => println!("review     (its record does not read)"),
        }
    }
    let denied = events
        .iter()
        .filter(|e| e.kind == EventKind::TeachbackDenied)
        .count();
    let alerts = events.iter().filter(|e| e.kind == EventKind::Alert).count();
    println!("gate       {denied} denied or would-have-denied call(s), {alerts} alert(s)");
    Ok(())
}

fn briefs(store: &dyn Blackboard, run: Option<&str>) -> CommandResult<Vec<Brief>> {
    let runs = match run {
        Some(typed) => vec![resolve_run(store, typed)?],
        None => store.list_runs()?.into_iter().map(|r| r.id).collect(),
    };
    let mut out = Vec::new();
    for run in runs {
        out.extend(store.list_briefs(run)?);
    }
    Ok(out)
}

/// Runs `agency teachback list`.
pub fn list(ctx: &Context, args: ListArgs) -> CommandResult {
    let store = ctx.open_store()?;
    let briefs = briefs(&*store, args.run.as_deref())?;
    if briefs.is_empty() {
        println!("no briefs");
        return Ok(());
    }
    println!(
        "{:<10} {:<13} {:<9} {:<4} TITLE",
        "BRIEF", "STATE", "MODE", "TIER"
    );
    for brief in briefs {
        println!(
            "{:<10} {:<13} {:<9} {:<4} {}",
            brief.id.short(),
            agency_review::gather::teachback_label(&brief),
            mode_name(&brief),
            brief.tier.as_str(),
            brief.title
        );
    }
    Ok(())
}

/// Runs `agency teachback report`.
pub fn report(ctx: &Context, args: ReportArgs) -> CommandResult {
    let store = ctx.open_store()?;
    let run = match &args.run {
        Some(typed) => Some(resolve_run(&*store, typed)?),
        None => None,
    };
    // (brief, tool) → (would-have-blocked under shadow/warn, blocked under enforce).
    let mut counts: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for event in all_events(&*store, run)?
        .iter()
        .filter(|e| e.kind == EventKind::TeachbackDenied)
    {
        let brief = event.brief.map_or("-".to_string(), |b| b.short());
        let (tool, blocked) = match event.typed() {
            Ok(EventPayload::TeachbackDenied(denied)) => (denied.tool, denied.blocked == Some(true)),
            _ => (String::new(), false),
        };
        let tool = Some(tool).filter(|t| !t.is_empty()).unwrap_or_else(|| "?".into());
        let entry = counts.entry((brief, tool)).or_default();
        if blocked {
            entry.1 += 1;
        } else {
            entry.0 += 1;
        }
    }
    if counts.is_empty() {
        println!("no denied or would-have-denied calls recorded");
        return Ok(());
    }
    println!(
        "{:<10} {:<16} {:>14} {:>8}",
        "BRIEF", "TOOL", "WOULD-BLOCK", "BLOCKED"
    );
    let (mut would, mut blocked) = (0, 0);
    for ((brief, tool), (w, b)) in &counts {
        println!("{brief:<10} {tool:<16} {w:>14} {b:>8}");
        would += w;
        blocked += b;
    }
    println!("{:<10} {:<16} {would:>14} {blocked:>8}", "total", "");
    Ok(())
}

/// Runs `agency teachback check`.
pub fn check(ctx: &Context, args: CheckArgs) -> CommandResult {
    let store = ctx.open_store()?;
    let config = super::team_config(ctx)?;
    let now = args.at.unwrap_or_else(Utc::now);
    let mut raised = 0;
    for run in store.list_runs()? {
        if matches!(
            run.status,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Halted | RunStatus::Cancelled
        ) {
            continue;
        }
        for brief in store.list_briefs(run.id)? {
            if raise_due(&*store, &brief, &config.teachback, now)?.is_some() {
                raised += 1;
            }
        }
    }
    println!("{raised} alert(s) raised");
    Ok(())
}
