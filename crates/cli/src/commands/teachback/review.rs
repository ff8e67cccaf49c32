//! The state-changing verbs: `submit` (the agent), `approve` and `correct` (the reviewer). Each writes a
//! structured record with its event; the agent sees it in the gate's next answer (a correction is quoted in
//! every denial until it resubmits; after approval its calls are allowed).

use std::io::Read;
use std::path::PathBuf;

use agency_core::intercept::teachback_text;
use agency_core::teachback::{ReviewVerdict, TeachbackAction, TeachbackError, TeachbackReview, transition};
use agency_core::variety::TeachbackMode;
use agency_core::{Brief, EventKind, NewEvent, Teachback};
use agency_store::Blackboard;
use serde_json::json;

use super::resolve_brief;
use crate::commands::{Context, decider, store_error};
use crate::error::{CommandError, CommandResult, ErrorKind};

/// `agency teachback submit [--brief B] [--file F | TEXT]`
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// The brief (default: $AGENCY_BRIEF).
    #[arg(long)]
    pub brief: Option<String>,
    /// Read the teachback from this file ("-" or nothing: stdin).
    #[arg(long, value_name = "PATH", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// The teachback: "Teachback:" and one "- Field: value" line per field, or its JSON.
    #[arg(allow_hyphen_values = true)]
    pub text: Option<String>,
}

/// `agency teachback approve <brief> [--note ...]`
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The brief: its id or a unique prefix.
    pub brief: String,
    /// A note for the agent.
    #[arg(long)]
    pub note: Option<String>,
}

/// `agency teachback correct <brief> --item ... [--item ...] [--note ...]`
#[derive(Debug, clap::Args)]
pub struct CorrectArgs {
    /// The brief: its id or a unique prefix.
    pub brief: String,
    /// One thing the agent has wrong; repeat for several.
    #[arg(long = "item", value_name = "TEXT", required = true)]
    pub items: Vec<String>,
    /// A note for the agent.
    #[arg(long)]
    pub note: Option<String>,
}

fn mode_of(brief: &Brief) -> TeachbackMode {
    brief
        .gates()
        .map_or(TeachbackMode::Advisory, |g| g.teachback_mode)
}

/// Applies `action` and writes `kind` with `payload` (plus `from`/`to`) in one compare-and-set.
fn apply(
    store: &dyn Blackboard,
    brief: &Brief,
    action: &TeachbackAction,
    kind: EventKind,
    mut payload: serde_json::Value,
) -> CommandResult<Brief> {
    let next = transition(brief.teachback, mode_of(brief), action).map_err(|err| {
        // An empty correction is bad input; anything else is an action the state does not allow.
        let kind = match err {
            TeachbackError::EmptyCorrections => ErrorKind::Input,
            TeachbackError::Illegal { .. } => ErrorKind::NothingToDo,
        };
        CommandError::new(kind, format!("brief {}: {err}", brief.id.short())).hint(format!(
            "`agency teachback show {}` shows where it stands",
            brief.id.short()
        ))
    })?;
    payload["from"] = json!(brief.teachback);
    payload["to"] = json!(next);
    let event = NewEvent::new(brief.run, kind, payload).brief(brief.id);
    store
        .set_teachback_state(brief.id, brief.teachback, next, event)
        .map_err(store_error)
}

fn read_teachback(args: &SubmitArgs) -> CommandResult<Teachback> {
    let text = match (&args.text, &args.file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) if path.as_os_str() != "-" => std::fs::read_to_string(path)
            .map_err(|e| CommandError::input(format!("cannot read {}: {e}", path.display())))?,
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            text
        }
    };
    // The header is optional here: the command already says this is a teachback.
    let parsed =
        teachback_text::parse(&text).or_else(|| teachback_text::parse(&format!("Teachback:\n{text}")));
    match parsed {
        Some(Ok(teachback)) => Ok(teachback),
        Some(Err(missing)) => Err(
            CommandError::input(format!("the teachback is incomplete: {missing}"))
                .hint(teachback_text::FORMAT_HINT),
        ),
        None => Err(CommandError::input("no teachback found in the input").hint(teachback_text::FORMAT_HINT)),
    }
}

/// Runs `agency teachback submit`.
pub fn submit(ctx: &Context, args: SubmitArgs) -> CommandResult {
    let teachback = read_teachback(&args)?;
    let store = ctx.open_store()?;
    let id = resolve_brief(&store, args.brief.as_deref())?;
    let brief = store.get_brief(id).map_err(store_error)?;
    let payload = json!({"teachback": teachback, "text": teachback.to_string(), "via": "cli"});
    let after = apply(
        &store,
        &brief,
        &TeachbackAction::Submit,
        EventKind::TeachbackSubmitted,
        payload,
    )?;
    println!(
        "submitted  teachback for brief {} ({}): now {}",
        brief.id.short(),
        brief.title,
        after.teachback
    );
    if after.teachback != agency_core::TeachbackState::Active {
        println!("wait for the reviewer: edits stay blocked until the teachback is approved");
    }
    Ok(())
}

fn review(ctx: &Context, typed: &str, verdict: ReviewVerdict, note: Option<String>) -> CommandResult<Brief> {
    let store = ctx.open_store()?;
    let id = resolve_brief(&store, Some(typed))?;
    let brief = store.get_brief(id).map_err(store_error)?;
    let review = TeachbackReview {
        verdict,
        reviewer: decider(),
        note,
    };
    let kind = match review.verdict {
        ReviewVerdict::Approved => EventKind::TeachbackApproved,
        ReviewVerdict::Corrections(_) => EventKind::TeachbackCorrected,
    };
    let payload = serde_json::to_value(&review).map_err(|e| CommandError::internal(e.to_string()))?;
    apply(&store, &brief, &review.action(), kind, payload)?;
    Ok(brief)
}

/// Runs `agency teachback approve`.
pub fn approve(ctx: &Context, args: ApproveArgs) -> CommandResult {
    let brief = review(ctx, &args.brief, ReviewVerdict::Approved, args.note)?;
    println!(
        "approved   teachback for brief {} ({}): now active",
        brief.id.short(),
        brief.title
    );
    Ok(())
}

/// Runs `agency teachback correct`.
pub fn correct(ctx: &Context, args: CorrectArgs) -> CommandResult {
    let count = args.items.len();
    let brief = review(
        ctx,
        &args.brief,
        ReviewVerdict::Corrections(args.items),
        args.note,
    )?;
    println!(
        "corrected  teachback for brief {} ({}): {count} item(s); now correcting, the agent must resubmit",
        brief.id.short(),
        brief.title
    );
    Ok(())
}
