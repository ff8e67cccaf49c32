//! The teachback gate's interception matrix, as one pure function: given a tool call, the brief's teachback
//! state and mode (blocking or advisory, derived from its variety) and the rollout mode, [`decide`] says
//! whether the call may run. `agency hook` (Claude Code and Codex) and the built-in runtime both go through
//! it, so every front end blocks exactly the same calls.
//!
//! While a blocking brief is not `active` the agent may read (Read, Glob, Grep, LS, TaskGet, TaskList and
//! their Codex equivalents), run the configured read-only shell commands ([`readonly`]: exact options,
//! not prefixes), and send its teachback; every
//! other call is denied with a reason that says what to do next. Unknown tools are denied too: a gate
//! that lets through what it does not recognise is no gate. Once `active`, or for advisory briefs,
//! everything is allowed.
//!
//! [`classify`] names the tool (Claude Code and Codex spell some differently); [`teachback_text`] reads a
//! teachback out of a message.

pub mod readonly;
pub mod task_create;
pub mod teachback_text;

use serde_json::Value;

use crate::config::{RolloutMode, TeachbackConfig};
use crate::teachback::{Teachback, TeachbackState};
use crate::variety::TeachbackMode;

/// What kind of call a tool call is, as far as the gate cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads files or tasks and changes nothing.
    ReadOnly,
    /// Changes files: Edit, Write, MultiEdit, NotebookEdit, apply_patch.
    Edit,
    /// Starts another agent: Agent (`Task` in older clients), Codex's spawn tools.
    SpawnAgent,
    /// Runs a shell command (Bash; Codex's exec_command/shell).
    Shell {
        /// The command line as the agent wrote it.
        command: String,
    },
    /// Sends a message to another agent (SendMessage).
    Message {
        /// The message text (a structured message is rendered as its JSON).
        text: String,
    },
    /// Creates a task (TaskCreate); its metadata is checked by [`task_create::validate`].
    TaskCreate,
    /// Anything else.
    Other,
}

/// Tools that only read, in Claude Code and Codex spelling.
pub const READ_ONLY_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "TaskGet",
    "TaskList",
    "NotebookRead",
    // Codex.
    "read_file",
    "list_dir",
    "grep_files",
    "view_image",
];

/// Tools that change files.
pub const EDIT_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"];

/// Tools that start another agent.
pub const SPAWN_TOOLS: &[&str] = &["Agent", "Task", "spawn_agent", "multi_agent_v1"];

/// Tools that run a shell command; the command is in `tool_input.command` (a string, or an argv list).
pub const SHELL_TOOLS: &[&str] = &["Bash", "exec_command", "shell", "local_shell", "container.exec"];

/// Names a tool call. `input` is the call's `tool_input`.
pub fn classify(tool_name: &str, input: &Value) -> ToolKind {
    if READ_ONLY_TOOLS.contains(&tool_name) {
        ToolKind::ReadOnly
    } else if EDIT_TOOLS.contains(&tool_name) {
        ToolKind::Edit
    } else if SPAWN_TOOLS.contains(&tool_name) {
        ToolKind::SpawnAgent
    } else if SHELL_TOOLS.contains(&tool_name) {
        let command = match input.get("command").or_else(|| input.get("cmd")) {
            Some(Value::String(s)) => s.clone(),
            // Quoted so that the read-only check sees exactly these words: joined plainly, `["git", "log",
            // "'", "--output=x", "'"]` would read as one quoted operand.
            Some(Value::Array(argv)) => readonly::shell::join(
                &argv
                    .iter()
                    .map(|a| a.as_str().unwrap_or_default())
                    .collect::<Vec<_>>(),
            ),
            _ => String::new(),
        };
        ToolKind::Shell { command }
    } else if tool_name == "SendMessage" {
        let text = match input.get("message") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        ToolKind::Message { text }
    } else if tool_name == "TaskCreate" {
        ToolKind::TaskCreate
    } else {
        ToolKind::Other
    }
}

/// Where the brief's teachback stands, as the gate needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateState {
    /// The teachback state.
    pub state: TeachbackState,
    /// Blocking or advisory, from the brief's variety.
    pub mode: TeachbackMode,
    /// How the gate acts while it is rolled out.
    pub rollout: RolloutMode,
}

/// The gate's answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolGateDecision {
    /// The call may run.
    Allow,
    /// The call carries the teachback: it may run, and the teachback is submitted
    /// (`pending → under_review` for blocking briefs, `pending → active` for advisory ones).
    Submit(Teachback),
    /// The call must not run; the reason goes to the agent.
    Deny {
        /// What is wrong and what to do next.
        reason: String,
    },
    /// Enforce would have denied the call; shadow and warn let it through and record it.
    WouldDeny {
        /// `Shadow` (silent) or `Warn` (the agent sees the reason as a warning).
        rollout: RolloutMode,
        /// The reason enforce would have given.
        reason: String,
    },
}

impl ToolGateDecision {
    /// Whether the call may run.
    pub fn runs(&self) -> bool {
        !matches!(self, ToolGateDecision::Deny { .. })
    }

    /// This verdict, reached under enforce, as `rollout` has it: a denial becomes a would-have-denied under
    /// shadow and warn; every other verdict stands. `decide(kind, gate, ..).under(rollout)` with
    /// `gate.rollout` enforce equals deciding under `rollout`, so a caller may look the rollout mode up only
    /// when the call would be denied.
    pub fn under(self, rollout: RolloutMode) -> ToolGateDecision {
        match (self, rollout) {
            (ToolGateDecision::Deny { reason }, RolloutMode::Shadow | RolloutMode::Warn) => {
                ToolGateDecision::WouldDeny { rollout, reason }
            }
            (verdict, _) => verdict,
        }
    }
}

/// What the gate blocks, before the rollout mode softens it.
enum Block {
    No,
    Yes(String),
    Submit(Teachback),
}

/// Whether [`decide`] allows this call whatever the configuration and rollout mode are: the gate is open
/// (advisory, or active) or the call only reads. The hook's fast path answers these without loading
/// team.yaml. A message is never decided here (it may carry the teachback), nor a TaskCreate (its metadata
/// is checked).
pub fn allowed_regardless(kind: &ToolKind, state: TeachbackState, mode: TeachbackMode) -> bool {
    match kind {
        ToolKind::Message { .. } | ToolKind::TaskCreate => false,
        ToolKind::ReadOnly => true,
        _ => mode == TeachbackMode::Advisory || state == TeachbackState::Active,
    }
}

/// The interception matrix. `corrections` are the reviewer's items when the state is `correcting`, quoted
/// in the reason so the agent knows what to fix.
pub fn decide(
    kind: &ToolKind,
    gate: GateState,
    config: &TeachbackConfig,
    corrections: &[String],
) -> ToolGateDecision {
    match block(kind, gate, config, corrections) {
        Block::No => ToolGateDecision::Allow,
        Block::Submit(teachback) => ToolGateDecision::Submit(teachback),
        Block::Yes(reason) => match gate.rollout {
            RolloutMode::Enforce => ToolGateDecision::Deny { reason },
            rollout => ToolGateDecision::WouldDeny { rollout, reason },
        },
    }
}

fn block(kind: &ToolKind, gate: GateState, config: &TeachbackConfig, corrections: &[String]) -> Block {
    let waiting = gate.state != TeachbackState::Active;
    let may_submit = matches!(gate.state, TeachbackState::Pending | TeachbackState::Correcting);
    if let ToolKind::Message { text } = kind {
        // A teachback is recorded in either mode; a message that only looks like one is refused with
        // what is missing, so a rote teachback never counts.
        if may_submit {
            match teachback_text::parse(text) {
                Some(Ok(teachback)) => return Block::Submit(teachback),
                Some(Err(missing)) if gate.mode == TeachbackMode::Blocking => {
                    return Block::Yes(format!(
                        "teachback gate: your teachback is incomplete: {missing}. {}",
                        teachback_text::FORMAT_HINT
                    ));
                }
                _ => {}
            }
        }
    }
    if gate.mode == TeachbackMode::Advisory || !waiting {
        return Block::No;
    }
    let refusal;
    let what = match kind {
        ToolKind::ReadOnly => return Block::No,
        ToolKind::Shell { command } if is_agency_teachback_command(command) => return Block::No,
        ToolKind::Shell { command } => match config.readonly_bash_refusal(command) {
            None => return Block::No,
            Some(why) => {
                refusal = format!(
                    "this command is not read-only ({why}), and shell commands other than read-only ones are"
                );
                refusal.as_str()
            }
        },
        ToolKind::Edit => "file changes are",
        ToolKind::SpawnAgent => "starting other agents is",
        ToolKind::Message { .. } => "messages other than your teachback are",
        ToolKind::TaskCreate | ToolKind::Other => "tools other than read-only ones are",
    };
    Block::Yes(reason(gate.state, what, corrections))
}

/// The denial text: what state the brief is in and what the agent should do next.
fn reason(state: TeachbackState, what: &str, corrections: &[String]) -> String {
    let next = match state {
        TeachbackState::Pending => format!(
            "Send your teachback first: a SendMessage to your lead starting with \"Teachback:\", or \
             `agency teachback submit`. {}",
            teachback_text::FORMAT_HINT
        ),
        TeachbackState::UnderReview => "Your teachback is under review: wait for the reviewer's answer \
             (approved, or corrections to address). Reading is allowed meanwhile."
            .to_string(),
        TeachbackState::Correcting => {
            let items: Vec<String> = corrections
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{}. {c}", i + 1))
                .collect();
            format!(
                "The reviewer asked for corrections: {}. Resubmit your teachback addressing each one \
                 (SendMessage starting with \"Teachback:\", or `agency teachback submit`).",
                if items.is_empty() {
                    "see `agency teachback show`".to_string()
                } else {
                    items.join(" ")
                }
            )
        }
        TeachbackState::Active => String::new(),
    };
    format!(
        "teachback gate: {what} not allowed while the teachback is {state}. {next}",
        state = state.as_str().replace('_', " ")
    )
}

/// Whether a shell command is `agency teachback submit|show|list ...` run on its own (no chaining or
/// redirection), which an agent may always run: it is how a teachback is sent from a shell.
pub fn is_agency_teachback_command(command: &str) -> bool {
    const CHAINING: [&str; 7] = [";", "&", "|", "`", "$(", ">", "\n"];
    if CHAINING.iter().any(|c| command.contains(c)) {
        return false;
    }
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    // By name or by absolute path: a relative `./agency` could be any file in the worktree.
    let program_ok = program == "agency" || (program.starts_with('/') && program.ends_with("/agency"));
    program_ok
        && words.next() == Some("teachback")
        && matches!(words.next(), Some("submit" | "show" | "list"))
}

#[cfg(test)]
mod tests;
