//! `agency hook` and `agency hook install`. The hook itself normally runs through the fast path in
//! [`crate::main`] (no argument parsing); this module handles it when global flags were given, and writes
//! the hook registration for Claude Code (`.claude/settings.json`) or Codex (`$CODEX_HOME/hooks.json`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agency_exec::runtime::hook_command::{self, Expect};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::commands::Context;
use crate::error::{CommandError, CommandResult};
use crate::hook::{self, HookEnv};

/// `agency hook [install ...]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Without a subcommand: answer the hook event on stdin.
    #[command(subcommand)]
    pub command: Option<HookCommand>,
}

/// `agency hook ...`
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Register `agency hook` as a PreToolUse hook for Claude Code (default) or Codex (and, for Claude Code,
    /// on PostToolUse of TaskCreate, which opens a task's brief).
    Install(InstallArgs),
}

/// `agency hook install [--claude-code] [--codex]`
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Register for Claude Code in the project's `.claude/` (the default when neither flag is given).
    #[arg(long)]
    pub claude_code: bool,
    /// Write `hooks.json` in the Codex home ($CODEX_HOME, else ~/.codex).
    #[arg(long)]
    pub codex: bool,
    /// The project directory for Claude Code (default: the repository's top level).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The Codex home (default: $CODEX_HOME, else ~/.codex).
    #[arg(long, value_name = "DIR")]
    pub codex_home: Option<PathBuf>,
    /// The hook command. By default, for Claude Code: `agency hook` in .claude/settings.json when the
    /// `agency` on PATH is this binary (it works on a teammate's machine), else this binary's absolute path
    /// in .claude/settings.local.json (this machine's own); for Codex: the absolute path. Where the slim
    /// `agency-hook` is installed beside this binary it takes the place of `agency hook` (for the shared
    /// settings, when it is also the `agency-hook` on PATH): the same answers, a faster start. The client
    /// runs it wrapped so that any failure of it (not found, a crash, an exit status other than 0 or 2,
    /// output that is not an answer) blocks the call.
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
}

/// Runs `agency hook`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    match args.command {
        None => {
            let mut env = HookEnv::from_process();
            if let Some(db) = &ctx.overrides.db {
                env.db = Some(db.clone());
            }
            if let Some(config) = &ctx.overrides.config {
                env.config = Some(config.clone());
            }
            let code = hook::run_with(&env);
            if code == ExitCode::SUCCESS {
                Ok(())
            } else {
                // Exit 2 is the hook's "blocked"; the message is already on stderr.
                std::process::exit(2)
            }
        }
        Some(HookCommand::Install(args)) => install(ctx, args),
    }
}

/// The hook registration: every tool call (no matcher) goes through the gate, whose command is wrapped to
/// fail closed ([`hook_command`]).
pub fn registration(command: &str) -> Value {
    let command = hook_command::fail_closed(command, Expect::AnyAnswer);
    json!({"hooks": [{"type": "command", "command": command, "timeout": 10}]})
}

/// The registration that turns a created task into a brief (Claude Code's TaskCreate; docs/hooks.md).
pub fn task_registration(command: &str) -> Value {
    let command = hook_command::fail_closed(command, Expect::AnyAnswer);
    json!({"matcher": "TaskCreate", "hooks": [{"type": "command", "command": command, "timeout": 10}]})
}

/// This agency binary's absolute path, then `hook`, quoted for the shell the client runs it through.
fn absolute_command() -> CommandResult<String> {
    let exe = std::env::current_exe()?;
    let exe = exe.to_string_lossy();
    Ok(if exe.contains(' ') {
        format!("'{exe}' hook")
    } else {
        format!("{exe} hook")
    })
}

/// The first `program` on `PATH`, if any.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The first `agency` on `PATH`, if any.
fn agency_on_path() -> Option<PathBuf> {
    on_path("agency")
}

/// The slim hook binary (`agency-hook`, the tool gate alone) installed beside this `agency`, if any.
fn slim_hook() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    Some(exe.with_file_name("agency-hook")).filter(|slim| slim.is_file())
}

/// `path` quoted for the shell the client runs the hook through, when it needs quoting.
fn shell_word(path: &Path) -> String {
    let path = path.to_string_lossy();
    if path.contains(' ') {
        format!("'{path}'")
    } else {
        path.into_owned()
    }
}

/// The tool gate's command: `agency-hook` (it starts faster: it links the tool gate only) in place of
/// `agency hook` when it is installed beside this binary; for the shared settings only when the
/// `agency-hook` on `PATH` is that one, since a teammate's machine runs whatever `PATH` finds there. Without
/// it, `agency hook` as before (the same answers). Either way the command is wrapped to fail closed.
fn slim_target(target: ClaudeTarget, why: String) -> (ClaudeTarget, String) {
    let Some(slim) = slim_hook() else {
        return (target, why);
    };
    let on_path_is_slim = on_path("agency-hook")
        .and_then(|found| found.canonicalize().ok())
        .is_some_and(|found| found == slim);
    match target {
        ClaudeTarget::Shared(command) if command == "agency hook" && on_path_is_slim => (
            ClaudeTarget::Shared("agency-hook".into()),
            "`agency-hook`: it is on PATH beside agency, so it works on any machine where agency is installed \
             (`cargo install --path crates/cli` installs both)"
                .into(),
        ),
        ClaudeTarget::Local(_) => (
            ClaudeTarget::Local(shell_word(&slim)),
            format!("{why}; the slim agency-hook beside it answers the gate"),
        ),
        shared => (shared, why),
    }
}

/// Where a Claude Code registration goes, and the command it runs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ClaudeTarget {
    /// `.claude/settings.json`, which a team commits: `agency hook`, found on each machine's `PATH`.
    Shared(String),
    /// `.claude/settings.local.json`, this machine's own: the binary's absolute path, which another
    /// machine does not have.
    Local(String),
}

/// A command that works on a teammate's machine goes in the shared settings; one that names this machine's
/// binary by its path does not. `agency hook` is used only when the `agency` on `PATH` is this very binary:
/// another one (an older install) would answer the gate with different rules.
pub(crate) fn claude_target(given: Option<String>) -> CommandResult<(ClaudeTarget, String)> {
    if let Some(command) = given {
        return Ok((ClaudeTarget::Shared(command), "the command given".into()));
    }
    let exe = std::env::current_exe()?;
    let same = |found: &PathBuf| match (found.canonicalize(), exe.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    Ok(match agency_on_path() {
        Some(found) if same(&found) => (
            ClaudeTarget::Shared("agency hook".into()),
            "`agency hook`: agency is on PATH, so it works on any machine where it is installed".into(),
        ),
        Some(found) => (
            ClaudeTarget::Local(absolute_command()?),
            format!(
                "this binary's path: the agency on PATH ({}) is another one; that path exists only on this \
                 machine, so it goes in the local settings",
                found.display()
            ),
        ),
        None => (
            ClaudeTarget::Local(absolute_command()?),
            "this binary's path: agency is not on PATH, and that path exists only on this machine, so it goes \
             in the local settings; `cargo install --path crates/cli --locked` puts agency on PATH, and \
             installing again then writes the shared settings"
                .into(),
        ),
    })
}

/// Adds registrations (hook event, entry) to a settings/hooks file, keeping everything else in it. A
/// second install replaces the earlier agency entry of the same event and matcher (the wrapped form, or the
/// bare `… agency hook` of earlier versions) rather than adding another (so the goal hooks' own PostToolUse
/// entry, which has no matcher, is kept).
fn merge_into(path: &Path, entries: &[(&str, Value)]) -> CommandResult {
    let mut settings: Value = match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text).map_err(|e| {
            CommandError::input(format!(
                "{}: not valid JSON ({e}); fix or remove it first",
                path.display()
            ))
        })?,
        Ok(_) => json!({}),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(err) => {
            return Err(CommandError::internal(format!(
                "cannot read {}: {err}",
                path.display()
            )));
        }
    };
    let Some(root) = settings.as_object_mut() else {
        return Err(CommandError::input(format!(
            "{}: expected a JSON object",
            path.display()
        )));
    };
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(CommandError::input(format!(
            "{}: \"hooks\" is not an object",
            path.display()
        )));
    };
    for (event, entry) in entries {
        let list = hooks.entry(*event).or_insert_with(|| json!([]));
        let Some(list) = list.as_array_mut() else {
            return Err(CommandError::input(format!(
                "{}: \"hooks.{event}\" is not a list",
                path.display()
            )));
        };
        let is_ours = |existing: &Value| {
            existing["matcher"] == entry["matcher"]
                && existing["hooks"].as_array().is_some_and(|hs| {
                    hs.iter()
                        .any(|h| h["command"].as_str().is_some_and(hook_command::is_agency_hook))
                })
        };
        list.retain(|existing| !is_ours(existing));
        list.push(entry.clone());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&settings).map_err(|e| CommandError::internal(e.to_string()))?;
    std::fs::write(path, text + "\n")?;
    Ok(())
}

fn install(ctx: &Context, args: InstallArgs) -> CommandResult {
    let claude = args.claude_code || !args.codex;
    if claude {
        let project = match args.project {
            Some(dir) => dir,
            None => crate::workspace::find_git_root(&ctx.cwd).unwrap_or_else(|| ctx.cwd.clone()),
        };
        let (target, why) = claude_target(args.command.clone())?;
        let (target, why) = match args.command {
            Some(_) => (target, why),
            None => slim_target(target, why),
        };
        let (file, command) = match &target {
            ClaudeTarget::Shared(command) => ("settings.json", command),
            ClaudeTarget::Local(command) => ("settings.local.json", command),
        };
        let path = project.join(".claude").join(file);
        merge_into(
            &path,
            &[
                ("PreToolUse", registration(command)),
                ("PostToolUse", task_registration(command)),
            ],
        )?;
        println!(
            "installed  PreToolUse hook (and PostToolUse for TaskCreate) for Claude Code in {}",
            path.display()
        );
        println!("command    {why}");
        println!(
            "note       a hook that fails (not found, crashes, answers garbage) blocks the call; one that hangs \
             past its 10 s timeout does not, outside the default permission mode: see docs/hooks.md"
        );
    }
    if args.codex {
        // Codex's hooks.json is in the user's own home, never shared: this binary's path is right there.
        let command = match args.command {
            Some(command) => command,
            None => match slim_hook() {
                Some(slim) => shell_word(&slim),
                None => absolute_command()?,
            },
        };
        let home = match args
            .codex_home
            .or_else(|| std::env::var_os("CODEX_HOME").map(PathBuf::from))
        {
            Some(home) => home,
            None => std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".codex"))
                .ok_or_else(|| CommandError::input("no CODEX_HOME or HOME; pass --codex-home"))?,
        };
        let path = home.join("hooks.json");
        merge_into(&path, &[("PreToolUse", registration(&command))])?;
        println!("installed  PreToolUse hook for Codex in {}", path.display());
        println!(
            "note       Codex runs hooks only once trusted (or with --dangerously-bypass-hook-trust); a hook that \
             fails blocks the call, one that hangs past its 10 s timeout does not: see docs/hooks.md"
        );
    }
    Ok(())
}
