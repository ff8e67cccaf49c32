//! `agency goal complete ID --evidence ... --path ... [--quote PATH:LINE]`: the two-stage sign-off of the
//! goal's contract against a commit (default `HEAD`), recorded on the blackboard. Accepted: the goal is set
//! done and the log says so. Rejected: it stays active, the missing items are logged and printed, exit 3.
//! Inconclusive: shown as such; it blocks (stays active, exit 3) unless `signoff.inconclusive_blocks` is
//! off, in which case the goal is set done with an inconclusive record.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agency_core::config::TeamConfig;
use agency_core::goals::{Goal, GoalStatus, PlanDoc, log_entry};
use agency_exec::runtime::external::blackboard_files;
use agency_exec::runtime::{AgentLimits, BuiltinRuntime, Evidence, Runtime, RuntimeError};
use agency_exec::{GitOptions, Repo};
use agency_llm::{Provider, RetryPolicy, ScriptedProvider};
use agency_signoff::{Judge, Outcome, Recording, SignoffReport, SignoffRequest, checkout, sign_off_blocking};
use chrono::Utc;

use super::plan_file::PlanFile;
use super::records::{Records, goals_run};
use crate::commands::Context;
use crate::error::{CommandError, CommandResult, ErrorKind};

/// Arguments of `agency goal complete`.
#[derive(Debug, clap::Args)]
pub struct CompleteArgs {
    /// The goal's id.
    pub id: String,
    /// What you claim, in a sentence (repeatable); the judge weighs it against the files.
    #[arg(long, value_name = "TEXT")]
    pub evidence: Vec<String>,
    /// A file in the commit that shows the work: a saved log, a test, the change (repeatable).
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// A line the file contains, as `PATH:LINE` (repeatable); checked against the file.
    #[arg(long = "quote", value_name = "PATH:LINE")]
    pub quotes: Vec<String>,
    /// The commit under review.
    #[arg(long, default_value = "HEAD")]
    pub commit: String,
    /// Where the goal started (default: the parent of the commit that added the goal to the plan file).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Answer the judge's model calls from this script instead of the configured judge model.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// The judge's model, as PROVIDER/MODEL (a provider of team.yaml), instead of team.yaml's signoff judge.
    #[arg(long, value_name = "PROVIDER/MODEL", conflicts_with = "script")]
    pub judge_model: Option<String>,
    /// The client session whose judge (`agency goal judge`) to use when --judge-model is not given.
    #[arg(long, env = "AGENCY_GOAL_SESSION", value_name = "ID")]
    pub session: Option<String>,
    /// The model the client session runs (pi's extension passes it): the judge when neither --judge-model
    /// nor the session's `agency goal judge` chose one (seed 002, D11). Its key is read from
    /// AGENCY_SESSION_MODEL_KEY, never from the command line.
    #[arg(long, value_name = "MODEL", requires_all = ["session_model_api", "session_model_url"])]
    pub session_model: Option<String>,
    /// The session model's wire protocol, as pi names it: `anthropic-messages` or `openai-completions`
    /// (another is refused as a judge and team.yaml's is used, with a note).
    #[arg(long, value_name = "API", requires = "session_model")]
    pub session_model_api: Option<String>,
    /// The session model's endpoint.
    #[arg(long, value_name = "URL", requires = "session_model")]
    pub session_model_url: Option<String>,
}

/// The environment variable that carries the session model's key to `agency goal complete`.
pub const SESSION_MODEL_KEY: &str = "AGENCY_SESSION_MODEL_KEY";

/// The provider name the session's model is registered under for the sign-off (not a key of team.yaml).
const SESSION_PROVIDER: &str = "(the session's model)";

/// Makes the model the client session runs (pi: `api` at `url`) the sign-off judge.
fn session_model_judge(team: &mut TeamConfig, model: &str, api: &str, url: &str) -> Result<(), String> {
    let kind = match api {
        "anthropic-messages" => agency_core::config::ProviderKind::Anthropic,
        "openai-completions" => agency_core::config::ProviderKind::Openai,
        other => {
            return Err(format!(
                "the session's model {model} speaks `{other}`, which agency cannot call as a judge \
                 (it calls anthropic-messages and openai-completions)"
            ));
        }
    };
    let mut provider = agency_core::config::ProviderConfig::of_kind(kind);
    provider.base_url = Some(url.to_string());
    provider.api_key_env = Some(SESSION_MODEL_KEY.to_string());
    team.providers.insert(SESSION_PROVIDER.to_string(), provider);
    team.signoff.judge_model = Some(agency_core::config::ModelBinding {
        provider: SESSION_PROVIDER.to_string(),
        model: model.to_string(),
        max_tokens: None,
        temperature: None,
    });
    Ok(())
}

/// Runs the sign-off and applies its outcome to the plan.
pub fn run(ctx: &Context, plan: &PlanFile, args: CompleteArgs) -> CommandResult {
    let doc = plan.read()?;
    let goal = plan.goal(&doc, &args.id)?;
    let ws = ctx.workspace()?;
    let store = ctx.open_store()?;
    check_status(goal, &args.id, &Records::at(&ws.db, plan)?)?;
    let contract = goal.contract();
    let evidence = evidence(&args)?;
    let mut team = team_config(&ws.config)?;
    let chosen = args.judge_model.clone().or_else(|| {
        args.session
            .as_deref()
            .and_then(|id| super::session::Session::load(&plan.root, Some(id)).judge_model)
    });
    let mut chooser = "team.yaml's signoff judge";
    if args.script.is_some() {
        chooser = "--script";
    } else if let Some(reference) = &chosen {
        team.signoff.judge_model = Some(judge_binding(ctx, reference)?);
        chooser = if args.judge_model.is_some() {
            "--judge-model"
        } else {
            "the session's /judge model"
        };
    } else if let (Some(model), Some(api), Some(url)) = (
        &args.session_model,
        &args.session_model_api,
        &args.session_model_url,
    ) {
        match session_model_judge(&mut team, model, api, url) {
            Ok(()) => chooser = "the session's model",
            Err(why) => println!("note       {why}; the judge is team.yaml's signoff judge"),
        }
    }
    let repo = Repo::open(&plan.root, GitOptions::default()).map_err(|e| {
        CommandError::input(e.to_string()).hint("run agency goal complete inside the git repository")
    })?;
    let added = goal_added_in(&repo, plan, &doc, goal)?;
    let base = match (&args.base, &added) {
        (Some(base), _) => base.clone(),
        (None, Some(added)) => checkout::parent_of(&repo, added)
            .map_err(|e| CommandError::internal(e.to_string()))?
            .unwrap_or_else(|| added.clone()),
        (None, None) => {
            return Err(CommandError::input(format!(
                "{}: goal {} is in no commit, so when it started is unknown",
                plan.relative(),
                args.id
            ))
            .hint(format!(
                "commit {} when you add a goal, or pass --base REV",
                plan.relative()
            )));
        }
    };
    let agreed = match &added {
        Some(added) => agreed_contract(&repo, plan, added, &args.id)?,
        None => None,
    };
    if uncommitted_work(&plan.root) {
        println!(
            "note       the work tree has uncommitted changes; only commit {} is reviewed",
            args.commit
        );
    }
    // A judge that cannot be built (no key) does not stop verify and the checks from running: the sign-off
    // then ends inconclusive, as any judge failure does.
    let (runtime, judge_name): (Box<dyn Runtime>, String) =
        match judge_provider(&team, args.script.as_deref()) {
            Ok(provider) => {
                let name = provider.model().to_string();
                (Box::new(BuiltinRuntime::new(provider)), name)
            }
            Err(err) => {
                let why = err.message.clone();
                eprintln!("warning: {why}");
                (Box::new(Unavailable(why)), "unavailable".to_string())
            }
        };
    let judge = Judge {
        runtime: runtime.as_ref(),
        limits: AgentLimits {
            max_turns: 20,
            timeout: Duration::from_secs(10 * 60),
            ..AgentLimits::default()
        },
        run_as: None,
    };
    let run = goals_run(&*store, plan)?;
    let recording = Recording {
        store: &*store,
        run,
        brief: None,
        tier: None,
        outcome_soon: false,
    };
    // The verify command runs the agent's code: in the same sandbox a run gives it.
    let mut hidden = vec![plan.root.join(".agency")];
    hidden.extend(ws.db.sqlite().map(blackboard_files).unwrap_or_default());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let sandbox = agency_exec::sandbox::configured(&team.sandbox, &hidden, home.as_deref());
    let request = SignoffRequest {
        repo: &repo,
        commit: &args.commit,
        base: &base,
        subject: &args.id,
        asked: None,
        contract: &contract,
        agreed: agreed.as_ref(),
        claims: &args.evidence,
        evidence: &evidence,
        verify_timeout: Duration::from_secs(team.signoff.verify_timeout_seconds.into()),
        verified: None,
        diffed: None,
        checkouts: &agency_signoff::CheckoutPlace::Temporary,
        sandbox: &sandbox,
    };
    println!("sign-off   {} (judge {judge_name}, {chooser})", args.id);
    let report = sign_off_blocking(&request, &judge, Some(&recording))
        .map_err(|e| CommandError::input(format!("{}: sign-off could not run: {e}", args.id)))?;
    print_report(&report);
    apply(plan, &args.id, &report, team.signoff.inconclusive_blocks)
}

/// Changes `git status` shows outside `.agency/` (agency's own files are not the agent's work).
fn uncommitted_work(root: &std::path::Path) -> bool {
    let spec = agency_exec::CommandSpec::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .cwd(root)
        .inherit_env("PATH")
        .inherit_env("HOME")
        .env("GIT_CONFIG_NOSYSTEM", "1");
    agency_exec::run(&spec).is_ok_and(|out| {
        out.stdout
            .text()
            .lines()
            .any(|line| !line.get(3..).unwrap_or_default().starts_with(".agency/"))
    })
}

/// The judge when no model can be built: every run fails with the reason, so the sign-off is inconclusive.
#[derive(Debug)]
struct Unavailable(String);

impl Runtime for Unavailable {
    fn name(&self) -> &'static str {
        "unavailable"
    }

    fn run<'a>(
        &'a self,
        _task: &'a agency_exec::runtime::AgentTask,
        _link: &'a dyn agency_exec::runtime::RunnerLink,
        _cancel: &'a agency_llm::CancelToken,
    ) -> agency_llm::BoxFuture<'a, Result<agency_exec::runtime::AgentOutcome, RuntimeError>> {
        Box::pin(async move { Err(RuntimeError::Other(self.0.clone())) })
    }
}

fn check_status(goal: &Goal, id: &str, records: &Records) -> CommandResult {
    match goal.status {
        Some(GoalStatus::Cancelled) => Err(CommandError::input(format!(
            "{id} is cancelled; set its status to active to work on it again"
        ))),
        Some(GoalStatus::Done) if records.signed.contains(id) => Err(CommandError::new(
            ErrorKind::NothingToDo,
            format!("{id} is already signed off"),
        )),
        _ => Ok(()),
    }
}

fn evidence(args: &CompleteArgs) -> CommandResult<Vec<Evidence>> {
    let mut out: Vec<Evidence> = args
        .paths
        .iter()
        .map(|path| Evidence {
            path: path.clone(),
            quote: None,
        })
        .collect();
    for quote in &args.quotes {
        let Some((path, line)) = quote.split_once(':') else {
            return Err(CommandError::input(format!(
                "--quote {quote:?}: expected PATH:LINE, e.g. logs/test.log:OK"
            )));
        };
        out.push(Evidence {
            path: path.trim().to_string(),
            quote: Some(line.strip_prefix(' ').unwrap_or(line).to_string()),
        });
    }
    Ok(out)
}

/// `PROVIDER/MODEL` as a model binding, its provider checked against team.yaml's `providers`.
pub fn judge_binding(ctx: &Context, reference: &str) -> CommandResult<agency_core::config::ModelBinding> {
    let (provider, model) = reference
        .split_once('/')
        .filter(|(p, m)| !p.trim().is_empty() && !m.trim().is_empty())
        .ok_or_else(|| {
            CommandError::input(format!(
                "judge model `{reference}`: expected PROVIDER/MODEL, a provider of team.yaml and its model id"
            ))
            .hint("for example: agency goal judge openai/gpt-5 --session ID")
        })?;
    let ws = ctx.workspace()?;
    let team = team_config(&ws.config)?;
    if !team.providers.contains_key(provider) {
        let mut known: Vec<&str> = team.providers.keys().map(String::as_str).collect();
        known.sort_unstable();
        return Err(CommandError::input(format!(
            "judge model `{reference}`: team.yaml has no provider `{provider}` (it has: {})",
            known.join(", ")
        ))
        .hint("add the provider under providers: in .agency/team.yaml"));
    }
    Ok(agency_core::config::ModelBinding {
        provider: provider.to_string(),
        model: model.to_string(),
        max_tokens: None,
        temperature: None,
    })
}

pub(super) fn team_config(path: &std::path::Path) -> CommandResult<TeamConfig> {
    if !path.is_file() {
        return Ok(TeamConfig::default());
    }
    let text = std::fs::read_to_string(path)?;
    agency_core::config::parse_team_config(&text, &path.display().to_string())
        .map_err(|e| CommandError::input(e.to_string()))
}

/// The judge's model: the script, `signoff.judge_model`, or the model of the `signoff.judge` level.
fn judge_provider(team: &TeamConfig, script: Option<&std::path::Path>) -> CommandResult<Arc<dyn Provider>> {
    if let Some(path) = script {
        let scripted = ScriptedProvider::from_file(path).map_err(|e| CommandError::input(e.to_string()))?;
        return Ok(Arc::new(scripted));
    }
    let model = match &team.signoff.judge_model {
        Some(binding) => {
            agency_llm::model_for_binding(team, binding, &agency_llm::process_env, RetryPolicy::default())
        }
        None => agency_llm::model_for_level(
            team,
            team.signoff.judge,
            &agency_llm::process_env,
            RetryPolicy::default(),
        ),
    }
    .map_err(|e| {
        CommandError::input(format!("signoff judge: {e}"))
            .hint("set the key variable team.yaml names, or pass --script FILE")
    })?;
    Ok(model.provider)
}

/// The commit that added the goal's id marker to the plan file, if it was ever committed.
fn goal_added_in(repo: &Repo, plan: &PlanFile, doc: &PlanDoc, goal: &Goal) -> CommandResult<Option<String>> {
    let marker = goal
        .lines
        .id
        .and_then(|line| doc.line(line))
        .map(str::trim)
        .unwrap_or_default();
    if marker.is_empty() {
        return Ok(None);
    }
    checkout::commit_adding(repo, &plan.relative(), marker).map_err(|e| CommandError::internal(e.to_string()))
}

/// The goal's contract as committed when it was added: what was agreed.
fn agreed_contract(
    repo: &Repo,
    plan: &PlanFile,
    added: &str,
    id: &str,
) -> CommandResult<Option<agency_core::contract::GoalContract>> {
    let text = checkout::file_at(repo, added, &plan.relative())
        .map_err(|e| CommandError::internal(e.to_string()))?;
    Ok(text.and_then(|text| PlanDoc::parse(&text).unique_goal(id).ok().map(Goal::contract)))
}

fn print_report(report: &SignoffReport) {
    let short = |c: &str| c.get(..8).unwrap_or(c).to_string();
    println!(
        "commit     {} (base {})",
        short(&report.commit),
        short(&report.base)
    );
    match &report.verify {
        Some(v) => println!("verify     {} `{}`", v.describe(), v.command),
        None => println!("verify     (the contract has no verify command)"),
    }
    match &report.judge {
        Some(Ok(verdict)) => println!(
            "judge      {}",
            if *verdict == agency_signoff::JudgeVerdict::Accept {
                "accept"
            } else {
                "reject"
            }
        ),
        Some(Err(why)) => println!("judge      no verdict: {why}"),
        None => println!("judge      not asked (the mechanical checks rejected first)"),
    }
    match &report.outcome {
        Outcome::Accepted => println!("accepted   {}", report.subject),
        Outcome::Rejected { by, missing } => {
            println!(
                "rejected   {} (by {})",
                report.subject,
                format!("{by:?}").to_lowercase()
            );
            println!("missing");
            for item in missing {
                let mut lines = item.lines();
                println!("  - {}", lines.next().unwrap_or_default());
                for more in lines {
                    println!("    {more}");
                }
            }
        }
        Outcome::Inconclusive { reason } => println!("INCONCLUSIVE {}: {reason}", report.subject),
    }
}

/// Patches the plan for the outcome and returns the command's result.
fn apply(plan: &PlanFile, id: &str, report: &SignoffReport, inconclusive_blocks: bool) -> CommandResult {
    let short = report.commit.get(..8).unwrap_or(&report.commit);
    let doc = plan.read()?;
    let (done, line) = match &report.outcome {
        Outcome::Accepted => {
            let verify = report
                .verify
                .as_ref()
                .map_or("no verify".to_string(), |v| format!("verify {}", v.describe()));
            (
                true,
                format!("{id} signed off at {short} ({verify}, judge accept)"),
            )
        }
        Outcome::Rejected { missing, .. } => {
            let items: Vec<String> = missing.iter().map(|m| log_item(m)).collect();
            (
                false,
                format!(
                    "{id} sign-off rejected at {short}: {}",
                    clip(&items.join("; "), 400)
                ),
            )
        }
        Outcome::Inconclusive { reason } => (
            !inconclusive_blocks,
            format!("{id} sign-off INCONCLUSIVE at {short}: {}", clip(reason, 300)),
        ),
    };
    let text = if done {
        doc.set_status(id, GoalStatus::Done)
            .map_err(|e| plan.patch_error(e))?
    } else {
        doc.text()
    };
    let text = PlanDoc::parse(&text)
        .append_log(&log_entry(Utc::now(), &line))
        .map_err(|e| plan.patch_error(e))?;
    plan.write(&text)?;
    if report.blocks(inconclusive_blocks) {
        let hint = match report.outcome {
            Outcome::Inconclusive { .. } => {
                "the judge gave no verdict: check its model settings (signoff.judge, signoff.judge_model) and run \
                 `agency goal complete` again"
            }
            _ => "fix what is missing, commit, and run `agency goal complete` again",
        };
        return Err(CommandError::input(format!(
            "{id}: sign-off {}; the goal stays active",
            report.outcome.word()
        ))
        .hint(hint));
    }
    Ok(())
}

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// One sign-off problem on one log line: its first line and, when it goes on (a verify failure's output
/// tail), the tail's last line, which is where test runners print their summary — so the line never ends
/// in a dangling "Output tail:".
fn log_item(problem: &str) -> String {
    let mut lines = problem.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    match lines.next_back() {
        Some(last) => format!("{first} … {last}"),
        None => first.to_string(),
    }
}

#[cfg(test)]
mod log_item_tests {
    use super::log_item;

    #[test]
    fn a_verify_failure_keeps_the_last_line_of_its_tail() {
        let problem = "verify `python3 -m unittest` failed in a clean checkout of abc1234 (exit 1); uncommitted \
                       changes do not count. Output tail:\nTraceback ...\nAssertionError: 1 != 2\n\nFAILED (failures=1)\n";
        let item = log_item(problem);
        assert!(item.ends_with("Output tail: … FAILED (failures=1)"), "{item}");
        assert_eq!(
            log_item("evidence path x.py does not exist"),
            "evidence path x.py does not exist"
        );
    }
}
