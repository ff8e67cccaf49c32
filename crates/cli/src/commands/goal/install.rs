//! `agency goal install-hooks`: registers `agency hook` for the goal events (SessionStart, PostCompact,
//! PostToolUse, Stop, UserPromptSubmit) in a Claude Code settings file, or a Codex `hooks.json` (same format), keeping
//! everything else in it. A second install replaces agency's earlier entries instead of adding more.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::commands::Context;
use crate::commands::hook::ClaudeTarget;
use crate::error::{CommandError, CommandResult};

/// The events the goal hooks answer.
pub const GOAL_EVENTS: [&str; 5] = [
    "SessionStart",
    "PostCompact",
    "PostToolUse",
    "Stop",
    "UserPromptSubmit",
];

/// `agency goal install-hooks [--settings FILE] [--command CMD]`
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The settings file. By default, as `agency hook install` decides: .claude/settings.json at the
    /// repository's top level when the `agency` on PATH is this binary (the command is then `agency hook`,
    /// which works on a teammate's machine), else .claude/settings.local.json (this machine's own) with this
    /// binary's absolute path. For Codex pass `$CODEX_HOME/hooks.json`.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// The command the client runs (default: `agency hook` when the `agency` on PATH is this binary, else
    /// this binary's absolute path, then `hook`).
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
}

/// Writes the registrations.
pub fn run(ctx: &Context, args: InstallArgs) -> CommandResult {
    let given_command = args.command.is_some();
    let (target, why) = crate::commands::hook::claude_target(args.command)?;
    let (file, command) = match target {
        ClaudeTarget::Shared(command) => ("settings.json", command),
        ClaudeTarget::Local(command) => ("settings.local.json", command),
    };
    let path = match args.settings {
        Some(path) => ctx.cwd.join(path),
        None => crate::workspace::find_git_root(&ctx.cwd)
            .unwrap_or_else(|| ctx.cwd.clone())
            .join(".claude")
            .join(file),
    };
    let mut settings = read_settings(&path)?;
    merge(&mut settings, &command).map_err(|what| {
        CommandError::input(format!("{}: {what}", path.display())).hint("fix or remove the file first")
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&settings)?;
    std::fs::write(&path, text + "\n")?;
    println!(
        "installed  goal hooks ({}) in {}",
        GOAL_EVENTS.join(", "),
        path.display()
    );
    if !given_command {
        println!("command    {why}");
    }
    Ok(())
}

fn read_settings(path: &Path) -> CommandResult<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text).map_err(|e| {
            CommandError::input(format!("{}: not valid JSON ({e})", path.display()))
                .hint("fix or remove the file first")
        }),
        Ok(_) => Ok(json!({})),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(err) => Err(CommandError::internal(format!(
            "cannot read {}: {err}",
            path.display()
        ))),
    }
}

/// Adds one `agency hook` entry per goal event, replacing earlier agency entries for those events.
pub fn merge(settings: &mut Value, command: &str) -> Result<(), String> {
    let root = settings.as_object_mut().ok_or("expected a JSON object")?;
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks.as_object_mut().ok_or("\"hooks\" is not an object")?;
    // A goal entry has no matcher: `agency hook install`'s TaskCreate entry (PostToolUse with a matcher)
    // is another registration and stays, in its bare form of earlier versions too.
    let is_ours = |entry: &Value| {
        entry.get("matcher").is_none()
            && entry["hooks"].as_array().is_some_and(|hs| {
                hs.iter().any(|h| {
                    h["command"]
                        .as_str()
                        .is_some_and(|c| c.ends_with("agency hook") || c.ends_with("agency' hook"))
                })
            })
    };
    for event in GOAL_EVENTS {
        let list = hooks.entry(event).or_insert_with(|| json!([]));
        let list = list
            .as_array_mut()
            .ok_or_else(|| format!("\"hooks.{event}\" is not a list"))?;
        list.retain(|entry| !is_ours(entry));
        // The Stop hook may run `git`, read the blackboard and ask the loop judge (20 s at most, so that
        // the hook never times out: a timed-out Stop hook lets the session stop).
        let timeout = if event == "Stop" { 60 } else { 30 };
        list.push(json!({"hooks": [{"type": "command", "command": command, "timeout": timeout}]}));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_other_hooks_and_replaces_ours() {
        let mut settings = json!({
            "model": "x",
            "hooks": {
                "PreToolUse": [{"hooks": [{"type": "command", "command": "/bin/agency hook"}]}],
                "Stop": [
                    {"hooks": [{"type": "command", "command": "other-tool"}]},
                    {"hooks": [{"type": "command", "command": "/old/agency hook"}]}
                ]
            }
        });
        merge(&mut settings, "/bin/agency hook").unwrap();
        merge(&mut settings, "/bin/agency hook").unwrap();
        assert_eq!(settings["model"], "x");
        assert_eq!(settings["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
        let stop = settings["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "other-tool");
        assert_eq!(stop[1]["hooks"][0]["command"], "/bin/agency hook");
        for event in GOAL_EVENTS {
            assert_eq!(
                settings["hooks"][event].as_array().unwrap().len(),
                if event == "Stop" { 2 } else { 1 }
            );
        }
        assert!(merge(&mut json!([]), "c").is_err());
        assert!(merge(&mut json!({"hooks": {"Stop": {}}}), "c").is_err());
    }
}
