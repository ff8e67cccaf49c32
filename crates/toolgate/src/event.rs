//! The hook event a client writes on stdin. Claude Code and Codex send the same shape (PROTOCOLS.md §4,
//! §7): `hook_event_name`, `session_id`, `cwd`, and for tool events `tool_name` and `tool_input`; inside a
//! Claude Code sub-agent also `agent_id`. Codex adds `turn_id` and `model`, which is how the client is told
//! apart. Parsing is tolerant of extra fields and never panics: anything unusable is a [`MalformedEvent`].

use std::path::PathBuf;

use serde_json::Value;

/// Which client called the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI Codex CLI.
    Codex,
}

/// The fields of a hook event the gate uses.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    /// `PreToolUse`, `PostToolUse`, `Stop`, ...
    pub event_name: String,
    /// The client session.
    pub session_id: Option<String>,
    /// The sub-agent, when the call comes from one (Claude Code).
    pub agent_id: Option<String>,
    /// The session's working directory.
    pub cwd: Option<PathBuf>,
    /// The tool, for tool events.
    pub tool_name: Option<String>,
    /// The tool's input, `Null` when absent.
    pub tool_input: Value,
    /// The client's id of the tool call (`toolu_…`, `call_…`).
    pub tool_use_id: Option<String>,
    /// What the tool returned (PostToolUse), `Null` when absent.
    pub tool_response: Value,
    /// Who sent it.
    pub client: Client,
}

/// Why stdin could not be read as a hook event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MalformedEvent {
    /// Not JSON at all.
    #[error("hook input is not JSON ({0}); expected the event object Claude Code or Codex sends on stdin")]
    NotJson(String),
    /// JSON, but not an object with `hook_event_name`.
    #[error(
        "hook input has no \"hook_event_name\" string; expected the event object Claude Code or Codex sends"
    )]
    NoEventName,
}

/// Hook events larger than this are refused rather than read into memory whole.
pub const MAX_INPUT_BYTES: usize = 16 * 1024 * 1024;

/// Parses one hook event.
pub fn parse(bytes: &[u8]) -> Result<HookEvent, MalformedEvent> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| MalformedEvent::NotJson(e.to_string()))?;
    from_value(&value)
}

/// Reads one hook event already parsed as JSON (the gate service receives it inside its request).
pub fn from_value(value: &Value) -> Result<HookEvent, MalformedEvent> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(String::from);
    let event_name = text("hook_event_name").ok_or(MalformedEvent::NoEventName)?;
    let client = if value.get("turn_id").is_some() {
        Client::Codex
    } else {
        Client::ClaudeCode
    };
    Ok(HookEvent {
        session_id: text("session_id"),
        agent_id: text("agent_id"),
        cwd: text("cwd").map(PathBuf::from),
        tool_name: text("tool_name"),
        tool_use_id: text("tool_use_id"),
        tool_input: value.get("tool_input").cloned().unwrap_or(Value::Null),
        tool_response: value.get("tool_response").cloned().unwrap_or(Value::Null),
        event_name,
        client,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Captured from Claude Code 2.1.197 (PROTOCOLS.md §4).
    const CLAUDE_PRE_TOOL_USE: &str = r#"{"session_id":"5f1c","transcript_path":"/h/.claude/projects/-w/5f1c.jsonl","cwd":"/w","prompt_id":"p1","permission_mode":"default","effort":{"level":"high"},"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/w/hello.txt","content":"hi"},"tool_use_id":"toolu_0002","agent_id":"aa2ba11d4552b1249","agent_type":"general-purpose"}"#;
    /// Captured from Codex 0.169.0 (PROTOCOLS.md §7).
    const CODEX_PRE_TOOL_USE: &str = r#"{"session_id":"s","turn_id":"t","transcript_path":"/c/sessions/r.jsonl","cwd":"/w","hook_event_name":"PreToolUse","model":"gpt-5.5","permission_mode":"bypassPermissions","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"},"tool_use_id":"call_4"}"#;

    #[test]
    fn reads_a_claude_code_event() {
        let event = parse(CLAUDE_PRE_TOOL_USE.as_bytes()).unwrap();
        assert_eq!(event.client, Client::ClaudeCode);
        assert_eq!(event.event_name, "PreToolUse");
        assert_eq!(event.tool_name.as_deref(), Some("Write"));
        assert_eq!(event.agent_id.as_deref(), Some("aa2ba11d4552b1249"));
        assert_eq!(event.tool_input["content"], "hi");
    }

    #[test]
    fn reads_a_codex_event() {
        let event = parse(CODEX_PRE_TOOL_USE.as_bytes()).unwrap();
        assert_eq!(event.client, Client::Codex);
        assert_eq!(event.tool_name.as_deref(), Some("apply_patch"));
        assert_eq!(event.agent_id, None);
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        assert!(matches!(parse(b""), Err(MalformedEvent::NotJson(_))));
        assert!(matches!(parse(b"[1,2]"), Err(MalformedEvent::NoEventName)));
        assert!(matches!(
            parse(br#"{"hook_event_name": 3}"#),
            Err(MalformedEvent::NoEventName)
        ));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn arbitrary_json_never_panics(
            name in proptest::option::of("[A-Za-z]{0,12}"),
            tool in proptest::option::of(".{0,16}"),
            input in prop_oneof![Just(Value::Null), any::<i64>().prop_map(Value::from),
                ".{0,32}".prop_map(Value::from)],
            extra in proptest::collection::btree_map("[a-z_]{1,10}", ".{0,8}", 0..4),
        ) {
            let mut object = serde_json::Map::new();
            if let Some(name) = name { object.insert("hook_event_name".into(), name.into()); }
            if let Some(tool) = tool { object.insert("tool_name".into(), tool.into()); }
            object.insert("tool_input".into(), input);
            for (k, v) in extra { object.insert(k, v.into()); }
            let bytes = serde_json::to_vec(&Value::Object(object)).unwrap();
            let _ = parse(&bytes);
        }

        #[test]
        fn mutated_real_events_never_panic(cut in 0usize..600, byte in any::<u8>()) {
            for source in [CLAUDE_PRE_TOOL_USE, CODEX_PRE_TOOL_USE] {
                let mut bytes = source.as_bytes().to_vec();
                let at = cut % bytes.len();
                bytes[at] = byte;
                let _ = parse(&bytes);
                let _ = parse(&bytes[..at]);
            }
        }
    }
}
