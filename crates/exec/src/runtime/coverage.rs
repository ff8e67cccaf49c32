//! The gate-coverage audit: every tool call a Claude Code or Codex agent made, as its own event stream tells
//! it, must have a decision recorded by the gate. A call the gate never decided is an ALERT and fails the
//! brief: the hook hung past the client's timeout (both clients then run the tool), the client skipped it
//! (users of Claude Code report hooks skipped for sub-agents), or something answered in its place.
//!
//! Where the record comes from ([`Decisions`]):
//! - **In a run**, the runner's gate service ([`crate::gate`]) answers every hook and keeps each answer in
//!   the agent's [`crate::gate::DecisionRecord`], in the runner's own memory: nothing the agent can write
//!   feeds it, so an agent that writes decisions into a file of its own is audited all the same.
//! - **Without a service** (a runtime built by hand, the runtime tests), `agency hook` appends one JSON line
//!   per PreToolUse decision to the file named by [`GATE_LOG_ENV`] (in the agent's private home). The agent
//!   can write that file too, so this catches a gate that failed or was skipped, not a forged record.
//!
//! Each decision holds the event's `tool_name`, `tool_use_id` and `tool_input`, and the gate's
//! `gate_decision` (`allow` or `deny`). The runtime collects the calls of the stream ([`StreamCall`]) and,
//! when the agent has ended, matches the two ([`audit`]):
//! - Claude Code puts the same `tool_use_id` in its stream and in the hook's event, sub-agents' calls
//!   included (their stream lines carry `parent_tool_use_id`): a call is covered by a decision with its id
//!   for the same tool, allow or deny (a denied call is in the stream too, with its refusal as the result).
//! - Codex's `--json` stream names neither the call id nor the tool's input as the hook saw it, and shows
//!   only calls that ran: a `command_execution` (`/bin/bash -lc '<command>'`) is covered by an allowed
//!   `Bash` decision for that command, a `file_change` by an allowed `apply_patch` whose patch names every
//!   changed path. Each decision covers one call.

use std::path::Path;

use serde_json::Value;

pub use crate::gate::GateDecision;

use super::{AgentStop, AlgedonicSignal, SignalCategory, SignalLevel};

/// The variable naming the file `agency hook` appends its decisions to.
pub const GATE_LOG_ENV: &str = "AGENCY_GATE_LOG";
/// That file's name in the agent's home.
pub const GATE_LOG_FILE: &str = "gate-decisions.jsonl";

/// The decision log in `home`, emptied for a new agent process: decisions of an earlier process of this
/// attempt must not cover this one's calls (a resumed session's stream shows only its new calls).
pub fn fresh_log(home: &Path) -> Result<std::path::PathBuf, super::RuntimeError> {
    let log = home.join(GATE_LOG_FILE);
    match std::fs::remove_file(&log) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(super::RuntimeError::Other(format!(
            "cannot remove {}: {e}",
            log.display()
        ))),
        _ => Ok(log),
    }
}

/// Where the audit reads the gate's decisions.
#[derive(Debug, Clone, PartialEq)]
pub enum Decisions<'a> {
    /// The runner's gate service's record of this agent's capability: the record in a run.
    Service(Vec<GateDecision>),
    /// The file `agency hook` appended to ([`GATE_LOG_ENV`]), when no service answered the agent.
    Log(&'a Path),
}

/// What identifies a call of the stream to its decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallTarget {
    /// The client's call id (Claude Code).
    Id(String),
    /// The command a shell ran (Codex `command_execution`).
    Command(String),
    /// The paths a patch changed (Codex `file_change`).
    Paths(Vec<String>),
}

/// One tool call as the agent's event stream shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamCall {
    /// The tool's name.
    pub tool: String,
    /// What it was called on, for the ALERT line.
    pub summary: String,
    /// How it is matched to a decision.
    pub target: CallTarget,
}

/// Reads the decision log: the decisions, and a problem per line that is not one (never a decision).
pub fn parse_log(text: &str) -> (Vec<GateDecision>, Vec<String>) {
    let mut decisions = Vec::new();
    let mut problems = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<GateDecision>(line) {
            Ok(decision) => decisions.push(decision),
            Err(e) => problems.push(format!(
                "{GATE_LOG_FILE}:{}: not a gate decision ({e}); expected {{\"tool_name\", \"gate_decision\", …}}",
                number + 1
            )),
        }
    }
    (decisions, problems)
}

/// The calls no decision covers, in stream order.
pub fn audit<'a>(calls: &'a [StreamCall], decisions: &[GateDecision]) -> Vec<&'a StreamCall> {
    let mut used = vec![false; decisions.len()];
    let mut uncovered = Vec::new();
    for call in calls {
        let found = decisions
            .iter()
            .enumerate()
            .find(|(i, d)| !used[*i] && covers(d, call));
        match found {
            Some((i, _)) => used[i] = true,
            None => uncovered.push(call),
        }
    }
    uncovered
}

fn covers(decision: &GateDecision, call: &StreamCall) -> bool {
    match &call.target {
        // The tool too: a decision for a call the gate was asked about (a Read) does not cover another call
        // given the same id (a Write).
        CallTarget::Id(id) => {
            decision.tool_use_id.as_deref() == Some(id.as_str()) && decision.tool_name == call.tool
        }
        CallTarget::Command(command) => {
            decision.allowed()
                && SHELL_TOOLS.contains(&decision.tool_name.as_str())
                && decision_command(decision).is_some_and(|decided| {
                    decided == command || shell_payload(command).as_deref() == Some(decided)
                })
        }
        CallTarget::Paths(changed) => {
            let named = patch_paths(decision_command(decision).unwrap_or_default());
            decision.allowed()
                && decision.tool_name == "apply_patch"
                && changed
                    .iter()
                    .all(|path| named.iter().any(|n| same_file(path, n)))
        }
    }
}

/// The names Codex gives its shell tool in hook events.
const SHELL_TOOLS: [&str; 4] = ["Bash", "exec_command", "shell", "local_shell"];

/// The command (or patch) in a decision's input: Codex puts both in `command`; `cmd` as a fallback.
fn decision_command(decision: &GateDecision) -> Option<&str> {
    let input = &decision.tool_input;
    input
        .get("command")
        .or_else(|| input.get("cmd"))
        .and_then(Value::as_str)
}

/// The paths a patch in Codex's format names (added, updated, deleted, moved to).
pub fn patch_paths(patch: &str) -> Vec<&str> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    patch
        .lines()
        .filter_map(|line| HEADERS.iter().find_map(|h| line.strip_prefix(h)))
        .map(str::trim)
        .collect()
}

/// Whether a changed path (absolute, as Codex's stream gives it) is the file a patch names (relative to the
/// agent's directory, or absolute).
fn same_file(changed: &str, named: &str) -> bool {
    let named = named.trim_start_matches("./");
    !named.is_empty() && (changed == named || changed.ends_with(&format!("/{named}")))
}

/// The command inside `<shell> -lc '<command>'` (or `-c`), the form Codex's stream shows a shell call in;
/// `None` when `command` is not of that form.
pub fn shell_payload(command: &str) -> Option<String> {
    let rest = [" -lc ", " -c "]
        .iter()
        .find_map(|flag| command.split_once(flag).map(|(_, rest)| rest))?;
    unquote_word(rest)
}

/// One POSIX shell word (quoted parts and backslash escapes) unquoted; `None` when `word` is more than one.
fn unquote_word(word: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    c => out.push(c),
                }
            },
            '"' => loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => {
                        let next = chars.next()?;
                        if !matches!(next, '"' | '\\' | '$' | '`') {
                            out.push('\\');
                        }
                        out.push(next);
                    }
                    c => out.push(c),
                }
            },
            '\\' => out.push(chars.next()?),
            c if c.is_whitespace() => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

impl<'a> Decisions<'a> {
    /// The record for an agent that ran with `gate` (the service's), or the log at `log` without one.
    pub fn of(gate: Option<&crate::gate::GateCapability>, log: &'a Path) -> Decisions<'a> {
        match gate {
            Some(gate) => Decisions::Service(gate.decisions()),
            None => Decisions::Log(log),
        }
    }
}

/// Runs the audit for an agent that has ended: reads the gate's decisions from `source`, records an ALERT
/// line for each call the gate never decided (through `alert`), and returns the stop that fails the brief,
/// if any.
pub fn check(
    source: &Decisions<'_>,
    calls: &[StreamCall],
    mut alert: impl FnMut(String),
) -> Option<AgentStop> {
    if calls.is_empty() {
        return None;
    }
    let (decisions, from) = match source {
        Decisions::Service(decisions) => (decisions.clone(), "the runner's gate service".to_owned()),
        Decisions::Log(log) => {
            let text = match std::fs::read_to_string(log) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => {
                    alert(format!("ALERT gate coverage: cannot read {}: {e}", log.display()));
                    String::new()
                }
            };
            let (decisions, problems) = parse_log(&text);
            for problem in problems {
                alert(format!("ALERT gate coverage: {problem}"));
            }
            (decisions, log.display().to_string())
        }
    };
    let uncovered = audit(calls, &decisions);
    if uncovered.is_empty() {
        return None;
    }
    let lines: Vec<String> = uncovered
        .iter()
        .map(|call| format!("{} ({})", call.tool, call.summary))
        .collect();
    for line in &lines {
        alert(format!(
            "ALERT gate coverage: {line} had no decision of the teachback gate"
        ));
    }
    Some(AgentStop::Signal(AlgedonicSignal {
        level: SignalLevel::Alert,
        category: SignalCategory::MetaBlock,
        issue: format!(
            "gate coverage: {} tool call(s) the teachback gate never decided: {}",
            uncovered.len(),
            lines.join("; ")
        ),
        evidence: format!(
            "the agent's event stream against the gate's decisions recorded by {from} ({} recorded)",
            decisions.len()
        ),
        impact: "the gate did not see these calls (its hook hung past the client's timeout, was skipped, or \
                 something answered in its place): the brief's work may include what the gate would have \
                 refused"
            .to_owned(),
        recommended_action: "check that `agency hook` runs and answers in time for this runtime, and review \
                             the brief's changes before retrying it"
            .to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decision(tool: &str, id: &str, input: Value, allow: bool) -> GateDecision {
        GateDecision {
            tool_name: tool.into(),
            tool_use_id: Some(id.into()),
            tool_input: input,
            gate_decision: if allow { "allow" } else { "deny" }.into(),
        }
    }

    fn by_id(tool: &str, id: &str) -> StreamCall {
        StreamCall {
            tool: tool.into(),
            summary: id.into(),
            target: CallTarget::Id(id.into()),
        }
    }

    #[test]
    fn claude_code_calls_match_by_id_allowed_or_denied() {
        let calls = [
            by_id("Write", "toolu_1"),
            by_id("Bash", "toolu_2"),
            by_id("Read", "toolu_3"),
        ];
        let decisions = [
            decision("Write", "toolu_1", json!({}), false),
            decision("Read", "toolu_3", json!({}), true),
        ];
        let uncovered = audit(&calls, &decisions);
        assert_eq!(uncovered, [&calls[1]]);
    }

    #[test]
    fn codex_commands_match_their_shell_form_once_each() {
        let command = |c: &str| StreamCall {
            tool: "exec_command".into(),
            summary: c.into(),
            target: CallTarget::Command(c.into()),
        };
        let calls = [
            command("/bin/bash -lc 'echo hi > b.txt'"),
            command("/bin/bash -lc 'echo hi > b.txt'"),
            command("/bin/bash -lc 'echo '\"'\"'q'\"'\"''"),
        ];
        let decisions = [
            decision("Bash", "call_1", json!({"command": "echo hi > b.txt"}), true),
            decision("Bash", "call_2", json!({"command": "echo 'q'"}), true),
        ];
        // The second identical command had no decision of its own.
        assert_eq!(audit(&calls, &decisions), [&calls[1]]);
        // A denied command that shows as run is not covered.
        let denied = [decision(
            "Bash",
            "c",
            json!({"command": "echo hi > b.txt"}),
            false,
        )];
        assert_eq!(audit(&calls[..1], &denied).len(), 1);
    }

    #[test]
    fn codex_patches_match_by_the_paths_they_name() {
        let patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n*** End Patch\n";
        let change = |paths: &[&str]| StreamCall {
            tool: "apply_patch".into(),
            summary: paths.join(", "),
            target: CallTarget::Paths(paths.iter().map(|p| (*p).to_owned()).collect()),
        };
        let decisions = [decision("apply_patch", "call_1", json!({"command": patch}), true)];
        let covered = change(&["/w/hello.txt", "/w/src/b.rs"]);
        assert!(audit(std::slice::from_ref(&covered), &decisions).is_empty());
        let other = change(&["/w/other.txt"]);
        assert_eq!(audit(std::slice::from_ref(&other), &decisions).len(), 1);
        // `xhello.txt` is not `hello.txt`.
        let lookalike = change(&["/w/xhello.txt"]);
        assert_eq!(audit(std::slice::from_ref(&lookalike), &decisions).len(), 1);
    }

    #[test]
    fn shell_payloads_are_unquoted() {
        assert_eq!(shell_payload("/bin/bash -lc 'cat a'").as_deref(), Some("cat a"));
        assert_eq!(
            shell_payload("bash -c \"echo \\\"x\\\"\"").as_deref(),
            Some("echo \"x\"")
        );
        assert_eq!(shell_payload("/bin/zsh -lc ls").as_deref(), Some("ls"));
        assert_eq!(shell_payload("ls -la"), None);
        assert_eq!(shell_payload("/bin/bash -lc 'unterminated"), None);
        assert_eq!(shell_payload("/bin/bash -lc 'a' 'b'"), None);
    }

    #[test]
    fn a_log_line_that_is_not_a_decision_is_a_problem_not_a_decision() {
        let text = "{\"tool_name\":\"Write\",\"tool_use_id\":\"t\",\"gate_decision\":\"allow\"}\nnot json\n\n{\"tool_name\":3}\n";
        let (decisions, problems) = parse_log(text);
        assert_eq!(decisions.len(), 1);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("gate-decisions.jsonl:2:"), "{problems:?}");
    }

    #[test]
    fn check_alerts_and_fails_only_when_a_call_was_never_decided() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(GATE_LOG_FILE);
        let calls = [by_id("Write", "toolu_1")];
        let mut lines = Vec::new();
        // No log at all: the gate never ran.
        let stop = check(&Decisions::Log(&log), &calls, |l| lines.push(l));
        let Some(AgentStop::Signal(signal)) = stop else {
            panic!("{stop:?}")
        };
        assert_eq!(signal.level, SignalLevel::Alert);
        assert!(signal.issue.contains("Write (toolu_1)"), "{}", signal.issue);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("ALERT gate coverage: Write (toolu_1)"),
            "{lines:?}"
        );
        std::fs::write(
            &log,
            "{\"tool_name\":\"Write\",\"tool_use_id\":\"toolu_1\",\"tool_input\":{},\"gate_decision\":\"allow\"}\n",
        )
        .unwrap();
        assert_eq!(check(&Decisions::Log(&log), &calls, |l| panic!("{l}")), None);
        // No calls: nothing to audit, whatever the log.
        let none = dir.path().join("none");
        assert_eq!(check(&Decisions::Log(&none), &[], |l| panic!("{l}")), None);
    }

    /// With a service, its record is the only one: a decision log the agent wrote in its home (here one
    /// covering the call exactly) counts for nothing.
    #[test]
    fn with_a_service_only_its_record_counts() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(GATE_LOG_FILE);
        std::fs::write(
            &log,
            "{\"tool_name\":\"Write\",\"tool_use_id\":\"toolu_1\",\"tool_input\":{},\"gate_decision\":\"allow\"}\n",
        )
        .unwrap();
        let calls = [by_id("Write", "toolu_1")];
        let mut lines = Vec::new();
        let stop = check(&Decisions::Service(Vec::new()), &calls, |l| lines.push(l));
        let Some(AgentStop::Signal(signal)) = stop else {
            panic!("{stop:?}")
        };
        assert!(
            signal.evidence.contains("gate service (0 recorded)"),
            "{}",
            signal.evidence
        );
        assert_eq!(lines.len(), 1, "{lines:?}");
        let decided = Decisions::Service(vec![decision("Write", "toolu_1", json!({}), true)]);
        assert_eq!(check(&decided, &calls, |l| panic!("{l}")), None);
    }

    #[test]
    fn an_id_covers_only_a_call_of_the_same_tool() {
        let calls = [by_id("Write", "toolu_1")];
        let read = [decision("Read", "toolu_1", json!({}), true)];
        assert_eq!(audit(&calls, &read).len(), 1);
    }

    #[test]
    fn a_decision_is_read_from_the_answer_the_gate_gave() {
        let event = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t1",
            "tool_input": {"command": "ls"}});
        let allow = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#;
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}"#;
        let of = |code, out| GateDecision::of_answer(&event, code, out).map(|d| d.gate_decision);
        assert_eq!(of(0, allow).as_deref(), Some("allow"));
        assert_eq!(of(0, deny).as_deref(), Some("deny"));
        assert_eq!(of(2, "").as_deref(), Some("deny"));
        assert_eq!(of(0, r#"{"decision":"block"}"#).as_deref(), Some("deny"));
        let decided = GateDecision::of_answer(&event, 0, allow).unwrap();
        assert_eq!(
            (decided.tool_name.as_str(), decided.tool_use_id.as_deref()),
            ("Bash", Some("t1"))
        );
        let post = json!({"hook_event_name": "PostToolUse", "tool_name": "Bash"});
        assert_eq!(GateDecision::of_answer(&post, 0, allow), None);
    }

    /// Recorded streams: a Claude Code session whose sub-agent wrote a file, and a Codex run.
    #[test]
    fn recorded_streams_yield_every_call() {
        let mut state = super::super::claude_code::stream::StreamState::default();
        for line in include_str!("../../tests/fixtures/claude-code/subagent.jsonl").lines() {
            super::super::claude_code::stream::map_line(line, &mut state, &Default::default());
        }
        let ids: Vec<_> = state
            .tool_calls
            .iter()
            .map(|c| (c.tool.as_str(), &c.target))
            .collect();
        assert_eq!(
            ids,
            [
                ("Read", &CallTarget::Id("toolu_0002".into())),
                ("Agent", &CallTarget::Id("toolu_0005".into())),
                ("Write", &CallTarget::Id("toolu_0008".into())),
            ]
        );
        // Tools a read-only agent is not offered, and an input that fails the schema: Claude Code refused
        // them before any hook ran, so there is nothing to audit.
        let mut state = super::super::claude_code::stream::StreamState::default();
        for line in include_str!("../../tests/fixtures/claude-code/not-offered.jsonl").lines() {
            super::super::claude_code::stream::map_line(line, &mut state, &Default::default());
        }
        assert_eq!(state.tool_calls, []);
        let mut state = super::super::codex::StreamState::default();
        for line in include_str!("../../tests/fixtures/codex/write.jsonl").lines() {
            super::super::codex::map_line(line, &mut state, &Default::default());
        }
        assert_eq!(
            state.calls.iter().map(|c| &c.target).collect::<Vec<_>>(),
            [
                &CallTarget::Paths(vec!["/tmp/cx/work/hello.txt".into()]),
                &CallTarget::Command("/bin/bash -lc 'cat hello.txt'".into()),
            ]
        );
        let decisions = [
            decision(
                "apply_patch",
                "call_3",
                json!({"command": "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"}),
                true,
            ),
            decision("Bash", "call_6", json!({"command": "cat hello.txt"}), true),
        ];
        assert!(audit(&state.calls, &decisions).is_empty());
        assert_eq!(audit(&state.calls, &decisions[..1]).len(), 1);
    }
}
