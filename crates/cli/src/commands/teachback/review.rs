//! The state-changing verbs: `submit` (the agent), `approve` and `correct` (the reviewer). Each writes a
//! structured record with its event (a review also decides the `teachback` gate a runner is waiting at, if
//! any, with the same verdict); the agent sees it in the gate's next answer (a correction is quoted in
//! every denial until it resubmits; after approval its calls are allowed). An agent a runner started
//! (`AGENCY_BRIEF` set) also gets it from `submit`, which waits, bounded, for the review and prints its
//! message, so the agent is woken by the answer rather than left waiting.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agency_core::intercept::teachback_text;
use agency_core::teachback::{ReviewVerdict, TeachbackReview, TeachbackState};
use agency_core::{Brief, GateId, Teachback};
use agency_engine::teachback_review;
use chrono::Utc;

use super::resolve_brief;
use crate::commands::{Context, decider};
use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::hook::{ENV_BRIEF, raise_due};

/// `agency teachback submit [--brief B] [--wait SECS] (--building ... | --file F | TEXT)`
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// The brief (default: $AGENCY_BRIEF).
    #[arg(long)]
    pub brief: Option<String>,
    /// Read the teachback from this file ("-" or nothing: stdin).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["text", "building"])]
    pub file: Option<PathBuf>,
    /// The teachback: "Teachback:" and one "- Field: value" line per field, or its JSON.
    #[arg(allow_hyphen_values = true, conflicts_with = "building")]
    pub text: Option<String>,
    #[command(flatten)]
    pub fields: FieldArgs,
    /// Wait up to this many seconds for the review and print it (default: 100 for an agent a runner
    /// started, i.e. with $AGENCY_BRIEF set; 0 otherwise).
    #[arg(long, value_name = "SECS")]
    pub wait: Option<u64>,
}

/// The teachback as one flag per field: one shell line, no file or here-document needed (what an agent
/// whose edits are still blocked can run).
#[derive(Debug, clap::Args)]
pub struct FieldArgs {
    /// What you understand you are building.
    #[arg(long, value_name = "TEXT", requires_all = ["constraints", "approach", "most_likely_wrong", "least_confident"])]
    pub building: Option<String>,
    /// A constraint you work within; repeat for several.
    #[arg(long = "constraint", value_name = "TEXT", requires = "building")]
    pub constraints: Vec<String>,
    /// An interface you produce or consume; repeat for several.
    #[arg(long = "interface", value_name = "TEXT", requires = "building")]
    pub interfaces: Vec<String>,
    /// A file you will touch (relative to the repository; a path ending in / for everything under it);
    /// repeat for several. An implementer's files are held against its squad lead's draft.
    #[arg(long = "touches", value_name = "PATH", requires = "building")]
    pub files: Vec<String>,
    /// Your approach, briefly.
    #[arg(long, value_name = "TEXT", requires = "building")]
    pub approach: Option<String>,
    /// The part of your understanding most likely to be wrong.
    #[arg(long, value_name = "TEXT", requires = "building")]
    pub most_likely_wrong: Option<String>,
    /// What you are least confident about.
    #[arg(long, value_name = "TEXT", requires = "building")]
    pub least_confident: Option<String>,
    /// The first thing you will do once allowed.
    #[arg(long, value_name = "TEXT", requires = "building")]
    pub first_action: Option<String>,
}

impl FieldArgs {
    fn teachback(&self) -> Option<Teachback> {
        Some(Teachback {
            building: self.building.clone()?,
            key_constraints: self.constraints.clone(),
            interfaces: self.interfaces.clone(),
            files: self.files.clone(),
            approach: self.approach.clone().unwrap_or_default(),
            most_likely_wrong: self.most_likely_wrong.clone().unwrap_or_default(),
            least_confident: self.least_confident.clone().unwrap_or_default(),
            first_action: self.first_action.clone(),
        })
    }
}

/// How long an agent a runner started waits for its review by default: under the two minutes Claude
/// Code gives a Bash command, so the wait ends with an answer rather than being killed.
const AGENT_WAIT_SECS: u64 = 100;
/// How often the gate service is asked while waiting.
const WAIT_POLL: Duration = teachback_review::WAIT_POLL;

/// `agency teachback approve <brief> [--note ...]`
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The brief: its short or full id, or any unique part at either end.
    pub brief: String,
    /// A note for the agent.
    #[arg(long)]
    pub note: Option<String>,
}

/// `agency teachback correct <brief> --item ... [--item ...] [--note ...]`
#[derive(Debug, clap::Args)]
pub struct CorrectArgs {
    /// The brief: its short or full id, or any unique part at either end.
    pub brief: String,
    /// One thing the agent has wrong; repeat for several.
    #[arg(long = "item", value_name = "TEXT", required = true)]
    pub items: Vec<String>,
    /// A note for the agent.
    #[arg(long)]
    pub note: Option<String>,
}

fn read_teachback(args: &SubmitArgs) -> CommandResult<Teachback> {
    if let Some(teachback) = args.fields.teachback() {
        return teachback.validate().map(|()| teachback).map_err(|e| {
            CommandError::input(format!("the teachback is incomplete: {} must not be empty", e.missing.join(", ")))
                .hint("give --building, --constraint (one or more), --approach, --most-likely-wrong and --least-confident")
        });
    }
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

/// Runs `agency teachback submit`. An agent in a run ([`crate::hook::ENV_GATE_SOCKET`] set) submits through
/// the runner's gate service, the only way it has to the blackboard.
pub fn submit(ctx: &Context, args: SubmitArgs) -> CommandResult {
    let teachback = read_teachback(&args)?;
    if let Some(gate) = crate::hook::HookEnv::from_process().gate {
        return submit_through_the_service(&gate, &args, teachback);
    }
    let store = ctx.open_store()?;
    let id = resolve_brief(&*store, args.brief.as_deref())?;
    let brief = store.get_brief(id)?;
    let cursor = store.last_seq(Some(brief.run))?;
    let after = teachback_review::submit(&*store, &brief, &teachback, "cli")?;
    println!(
        "submitted  teachback for brief {} ({}): now {}",
        brief.id.short(),
        brief.title,
        after.teachback
    );
    if after.teachback == TeachbackState::Active {
        return Ok(());
    }
    let runner_started = std::env::var(ENV_BRIEF).is_ok_and(|v| !v.is_empty());
    let wait = args
        .wait
        .unwrap_or(if runner_started { AGENT_WAIT_SECS } else { 0 });
    if wait == 0 {
        println!("wait for the reviewer: edits stay blocked until the teachback is approved");
        return Ok(());
    }
    println!("waiting up to {wait} s for the review...");
    match teachback_review::wait_for_review(&*store, &after, cursor, Duration::from_secs(wait))? {
        Some(message) => println!("{message}"),
        None => {
            println!(
                "No review yet after {wait} s. Reading is allowed meanwhile; `agency teachback show` shows the \
                 review once it is made (approved: go on; corrections: address them and submit again)."
            );
            let config = super::team_config(ctx)?;
            let current = store.get_brief(after.id)?;
            raise_due(&*store, &current, &config.teachback, Utc::now())?;
        }
    }
    Ok(())
}

/// How long one request to the gate service may take.
const SERVICE_TIMEOUT: Duration = Duration::from_secs(10);

/// `submit` for an agent in a run: the gate service records the teachback for the agent's own brief
/// ([`ENV_BRIEF`]; another is refused) and is asked for the review until it comes or the wait ends. A
/// service that cannot be reached is an error saying so: nothing was submitted.
fn submit_through_the_service(
    gate: &crate::hook::GateEnv,
    args: &SubmitArgs,
    teachback: Teachback,
) -> CommandResult {
    use crate::gate_service::{Request, request};
    let brief = match (
        &args.brief,
        std::env::var(ENV_BRIEF).ok().filter(|v| !v.is_empty()),
    ) {
        (_, Some(own)) => own,
        (Some(typed), None) => typed.clone(),
        (None, None) => {
            return Err(CommandError::new(
                ErrorKind::Usage,
                format!("which brief? {ENV_BRIEF} is not set"),
            ));
        }
    };
    let unreachable = |problem: String| {
        CommandError::new(
            ErrorKind::Internal,
            format!(
                "the runner's gate service ({}) refused or did not answer: {problem}",
                gate.socket.display()
            ),
        )
        .hint("nothing was submitted; tell your lead")
    };
    let submitted = request(
        &gate.socket,
        &Request::Submit {
            brief: brief.clone(),
            token: gate.token.clone(),
            teachback,
        },
        SERVICE_TIMEOUT,
    )
    .map_err(unreachable)?;
    let state = submitted["state"].as_str().unwrap_or_default().to_owned();
    let cursor = submitted["cursor"].as_i64().unwrap_or_default();
    println!(
        "submitted  teachback for brief {} ({}): now {state}",
        submitted["short"].as_str().unwrap_or_default(),
        submitted["title"].as_str().unwrap_or_default(),
    );
    if state == TeachbackState::Active.as_str() {
        return Ok(());
    }
    let wait = args.wait.unwrap_or(AGENT_WAIT_SECS);
    if wait == 0 {
        println!("wait for the reviewer: edits stay blocked until the teachback is approved");
        return Ok(());
    }
    println!("waiting up to {wait} s for the review...");
    let deadline = Instant::now() + Duration::from_secs(wait);
    loop {
        let review = request(
            &gate.socket,
            &Request::Review {
                brief: brief.clone(),
                token: gate.token.clone(),
                after: cursor,
            },
            SERVICE_TIMEOUT,
        )
        .map_err(unreachable)?;
        if !review["waiting"].as_bool().unwrap_or(true) {
            let message = review["message"].as_str().map_or_else(
                || {
                    format!(
                        "The teachback is now {}; `agency teachback show` shows the review.",
                        review["state"].as_str().unwrap_or_default()
                    )
                },
                String::from,
            );
            println!("{message}");
            return Ok(());
        }
        if Instant::now() >= deadline {
            println!(
                "No review yet after {wait} s. Reading is allowed meanwhile; the gate's answers say when the \
                 teachback is approved (go on) or corrected (address the corrections and submit again)."
            );
            return Ok(());
        }
        std::thread::sleep(WAIT_POLL);
    }
}

/// Records a human review of `typed`'s teachback ([`teachback_review::review`]), deciding the teachback
/// gate a runner waits at with the same verdict. Returns the brief, and the gate when there was one.
fn review(
    ctx: &Context,
    typed: &str,
    verdict: ReviewVerdict,
    note: Option<String>,
) -> CommandResult<(Brief, Option<GateId>)> {
    let store = ctx.open_store()?;
    let id = resolve_brief(&*store, Some(typed))?;
    let brief = store.get_brief(id)?;
    let review = TeachbackReview {
        verdict,
        reviewer: decider(),
        note,
    };
    let gate = teachback_review::review(&*store, &brief, &review)?;
    Ok((brief, gate))
}

/// The line saying the review also decided the teachback gate, if there was one.
fn print_gate(gate: Option<GateId>, how: &str) {
    if let Some(gate) = gate {
        println!("{how}  its teachback gate {}: the run goes on", gate.short());
    }
}

/// Runs `agency teachback approve`.
pub fn approve(ctx: &Context, args: ApproveArgs) -> CommandResult {
    let (brief, gate) = review(ctx, &args.brief, ReviewVerdict::Approved, args.note)?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    println!(
        "approved   teachback for brief {} ({}): now active",
        brief.id.short(),
        brief.title
    );
    print_gate(gate, "approved ");
    Ok(())
}

/// Runs `agency teachback correct`.
pub fn correct(ctx: &Context, args: CorrectArgs) -> CommandResult {
    let count = args.items.len();
    let (brief, gate) = review(
        ctx,
        &args.brief,
        ReviewVerdict::Corrections(args.items),
        args.note,
    )?;
    // A waiting runner sees it now rather than at its next poll.
    crate::gate_service::poke_workspace(ctx);
    println!(
        "corrected  teachback for brief {} ({}): {count} item(s); now correcting, the agent must resubmit",
        brief.id.short(),
        brief.title
    );
    print_gate(gate, "rejected ");
    Ok(())
}
