//! What the hook says back, and how each answer is written for the client: JSON on stdout with exit 0
//! (`hookSpecificOutput.permissionDecision`), or exit 2 with the reason on stderr when no JSON answer can
//! be trusted. Both Claude Code and Codex block on either (PROTOCOLS.md §4, §7); both treat exit 1 and
//! garbage as "no answer", which is why the gate never relies on them.

use std::io::Write;

use serde_json::{Value, json};

/// The hook's answer to one event.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// No opinion: exit 0, no output. The client decides as it would without the hook.
    Silent,
    /// An explicit allow: this is what lets a call through when the agent runs in a permission mode where a
    /// missing answer means "denied" (the fail-closed set-up).
    Allow,
    /// Allow, running the tool with this input instead (TaskCreate with derived metadata).
    AllowUpdated(Value),
    /// Allow, and tell the agent this (a task it took and the brief it now works under).
    AllowWithContext(String),
    /// After a tool ran (PostToolUse): add this text to the agent's context.
    PostToolUseContext(String),
    /// Allow, and tell the agent (and user) this would have been denied under enforce.
    Warn(String),
    /// Allow, and warn the user loudly that the gate is not working (plain sessions only).
    OpenWithWarning(String),
    /// Deny; the reason reaches the model verbatim.
    Deny(String),
    /// Exit 2 with this message on stderr: blocks a pending tool call without needing parsable output.
    Block(String),
}

/// Writes the answer and returns the exit code.
pub fn write(answer: &Answer, out: &mut impl Write, err: &mut impl Write) -> u8 {
    let decision = |decision: &str, reason: &str| {
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }})
    };
    let body = match answer {
        Answer::Silent => return 0,
        Answer::Block(message) => {
            let _ = writeln!(err, "{message}");
            return 2;
        }
        Answer::Allow => decision("allow", "agency: teachback gate open"),
        Answer::AllowUpdated(input) => {
            let mut body = decision("allow", "agency: task metadata validated");
            body["hookSpecificOutput"]["updatedInput"] = input.clone();
            body
        }
        Answer::AllowWithContext(text) => {
            let mut body = decision("allow", "agency: teachback gate open");
            body["hookSpecificOutput"]["additionalContext"] = Value::from(text.as_str());
            body
        }
        Answer::PostToolUseContext(text) => {
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}})
        }
        Answer::Warn(reason) => {
            let mut body = decision("allow", reason);
            let warning =
                format!("WARNING (teachback gate in warn mode, this call would be denied): {reason}");
            body["hookSpecificOutput"]["additionalContext"] = Value::from(warning.clone());
            body["systemMessage"] = Value::from(warning);
            body
        }
        Answer::OpenWithWarning(message) => {
            let _ = writeln!(err, "{message}");
            json!({"systemMessage": message})
        }
        Answer::Deny(reason) => decision("deny", reason),
    };
    let _ = writeln!(out, "{body}");
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(answer: &Answer) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = write(answer, &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn deny_is_the_documented_json() {
        let (code, out, err) = written(&Answer::Deny("R".into()));
        assert_eq!(code, 0);
        assert_eq!(err, "");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "R"}})
        );
    }

    #[test]
    fn allow_is_explicit_and_updated_input_rides_along() {
        let (_, out, _) = written(&Answer::Allow);
        assert!(out.contains(r#""permissionDecision":"allow""#), "{out}");
        let (_, out, _) = written(&Answer::AllowUpdated(json!({"subject": "s"})));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hookSpecificOutput"]["updatedInput"]["subject"], "s");
    }

    #[test]
    fn block_and_silent_use_the_exit_code() {
        assert_eq!(
            written(&Answer::Block("no".into())),
            (2, String::new(), "no\n".into())
        );
        assert_eq!(written(&Answer::Silent), (0, String::new(), String::new()));
    }

    #[test]
    fn context_rides_on_an_allow_or_after_the_tool() {
        let (_, out, _) = written(&Answer::AllowWithContext("C".into()));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "allow");
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], "C");
        let (code, out, _) = written(&Answer::PostToolUseContext("C".into()));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(code, 0);
        assert_eq!(
            v,
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "C"}})
        );
    }

    #[test]
    fn warn_allows_and_tells() {
        let (_, out, _) = written(&Answer::Warn("R".into()));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "allow");
        assert!(
            v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .contains("would be denied")
        );
    }
}
