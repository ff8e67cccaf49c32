//! `agency teachback start`: the gate for a plain Claude Code session, with no runner. It opens a brief
//! (in a run of its own) with the variety the user gives, so the gate knows whether teachback blocks, and
//! binds the session — or one sub-agent in it — to that brief; or binds to an existing brief.

use agency_core::brief::{BriefPlacement, NewBrief};
use agency_core::variety::Variety;
use agency_core::{BriefId, Tier};
use agency_store::{Blackboard, NewRun};
use chrono::Utc;

use super::resolve_brief;
use crate::commands::Context;
use crate::error::{CommandError, CommandResult};

/// `agency teachback start (--brief B | --title T --variety N,S,U,R) [--session S [--agent A]]`
#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// Bind to this existing brief instead of opening a new one.
    #[arg(long, conflicts_with_all = ["title", "variety"])]
    pub brief: Option<String>,
    /// The new brief's title.
    #[arg(long, required_unless_present = "brief")]
    pub title: Option<String>,
    /// The new brief's variety: novelty,scope,uncertainty,risk (each 1-4); 7 or more makes teachback blocking.
    #[arg(long, value_name = "N,S,U,R", required_unless_present = "brief")]
    pub variety: Option<String>,
    /// What the agent is asked to do (the new brief's instructions).
    #[arg(long, default_value = "")]
    pub instructions: String,
    /// The Claude Code session to bind (its `session_id`).
    #[arg(long)]
    pub session: Option<String>,
    /// The sub-agent to bind (its `agent_id`), within the session.
    #[arg(long, requires = "session")]
    pub agent: Option<String>,
}

fn parse_variety(text: &str) -> CommandResult<Variety> {
    let parts: Vec<i64> = text
        .split(',')
        .map(|p| p.trim().parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| CommandError::input(format!("--variety {text}: expected four integers like 2,2,1,2")))?;
    let [novelty, scope, uncertainty, risk] = parts[..] else {
        return Err(CommandError::input(format!(
            "--variety {text}: expected four values (novelty,scope,uncertainty,risk), found {}",
            parts.len()
        )));
    };
    Variety::new(novelty, scope, uncertainty, risk)
        .map_err(|e| CommandError::input(format!("--variety: {e}")))
}

fn open_brief(
    store: &dyn Blackboard,
    ctx: &Context,
    title: &str,
    variety: Variety,
    instructions: &str,
) -> CommandResult<BriefId> {
    let goal = if instructions.is_empty() {
        title
    } else {
        instructions
    };
    let run = store.create_run(NewRun::new(goal, ctx.cwd.display().to_string()))?;
    let request = NewBrief {
        tier: Tier::T4,
        workstream: "session".into(),
        title: title.into(),
        personality: None,
        instructions: instructions.into(),
        inputs: Vec::new(),
        variety: Some(variety),
        contract: None,
        depends_on: Vec::new(),
    };
    let brief = request.into_brief(BriefPlacement {
        id: BriefId::new(),
        run: run.id,
        parent: None,
        goal_anchor: goal.into(),
        retry_budget: 0,
        depends_on: Vec::new(),
        created_at: Utc::now(),
    });
    store.insert_brief(&brief)?;
    Ok(brief.id)
}

/// Runs `agency teachback start`.
pub fn start(ctx: &Context, args: StartArgs) -> CommandResult {
    let store = ctx.open_store()?;
    let id = match (&args.brief, &args.title, &args.variety) {
        (Some(typed), _, _) => resolve_brief(&*store, Some(typed))?,
        (None, Some(title), Some(variety)) => {
            open_brief(&*store, ctx, title, parse_variety(variety)?, &args.instructions)?
        }
        _ => return Err(CommandError::input("give --brief, or --title and --variety")),
    };
    let brief = store.get_brief(id)?;
    let mode = brief.gates().map_or("advisory", |g| g.teachback_mode.as_str());
    println!("brief      {} {} ({mode} teachback)", brief.id, brief.title);
    if let Some(session) = &args.session {
        store.bind_session(session, args.agent.as_deref(), brief.id)?;
        match &args.agent {
            Some(agent) => println!("bound      agent {agent} of session {session}"),
            None => println!("bound      session {session}"),
        }
    } else {
        println!(
            "for a runner-style agent: AGENCY_BRIEF={} AGENCY_DB=<this blackboard>",
            brief.id
        );
    }
    Ok(())
}
