//! The cheap loop judge (seed pi-goals D5/D10) for a client that cannot ask its own model: Claude Code. pi's
//! extension asks pi's model itself and hands the answer to `agency goal loop verdict`; Claude Code's Stop
//! hook is a plain command, so `agency hook` asks the model here, with the same prompt
//! ([`super::hooks::loop_judge_prompt`]) and the same verdict ([`super::goal_loop::apply_verdict`]).
//!
//! The model is the session's own (D10: main model, tiny prompt): the `model` of the last assistant entry in
//! the session's transcript (`transcript_path`). It is called where Claude Code calls
//! it, from the hook's environment, which is Claude Code's: `ANTHROPIC_BASE_URL` (default the public API) and
//! `ANTHROPIC_API_KEY`. A subscription login has no key a hook can use, so there the judge cannot run.
//!
//! It fails open: no model, no key, an error, more than [`TIMEOUT`] or an answer that cannot be read
//! continues the loop, and the stop budget is the backstop. `AGENCY_GOAL_LOOP_JUDGE=off` turns it off.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use agency_llm::{AnthropicClient, AnthropicConfig, ApiKey, Message, Request, Timeouts};
use serde_json::Value;

/// `off` turns the loop judge of the Claude Code Stop hook off (the budget alone then bounds the loop).
pub const ENV_LOOP_JUDGE: &str = "AGENCY_GOAL_LOOP_JUDGE";

/// How long the judge's one call may take: well under the Stop hook's 60 s, because a hook that times out
/// lets the session stop, which would be failing closed.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// How much of the transcript's end is read for the model (bytes).
const TRANSCRIPT_TAIL: u64 = 1 << 20;

/// Whether the Stop hook asks the loop judge for this event: not when the client asks its own model (pi's
/// `"loop_judge": true`), not for Codex (its events carry a `turn_id`; its model is not Anthropic's), not
/// when turned off.
pub fn wanted(raw: &Value) -> bool {
    let off = std::env::var(ENV_LOOP_JUDGE).is_ok_and(|v| v.trim().eq_ignore_ascii_case("off"));
    !off && raw.get("loop_judge").is_none() && raw.get("turn_id").is_none()
}

/// How long to wait for Claude Code to write the turn's first assistant entry: it writes its transcript
/// behind the conversation, and a Stop after a one-message first turn can come before the entry.
const TRANSCRIPT_WAIT: Duration = Duration::from_secs(3);

/// The session's model, read from its transcript.
pub fn session_model(raw: &Value) -> Result<String, String> {
    let path = raw
        .get("transcript_path")
        .and_then(Value::as_str)
        .ok_or_else(|| "the Stop event names no transcript_path".to_string())?;
    let started = std::time::Instant::now();
    loop {
        if let Some(model) = last_model(Path::new(path)) {
            return Ok(model);
        }
        if started.elapsed() >= TRANSCRIPT_WAIT {
            return Err(format!(
                "the session's model is not in its transcript {path} (waited {} s)",
                TRANSCRIPT_WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The `message.model` of the last assistant entry in a Claude Code transcript (JSON lines).
fn last_model(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TRANSCRIPT_TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().rev().find_map(|line| {
        let entry: Value = serde_json::from_str(line).ok()?;
        if entry.get("type").and_then(Value::as_str) != Some("assistant") {
            return None;
        }
        let model = entry.pointer("/message/model")?.as_str()?;
        // Claude Code writes its own notices as `<synthetic>` assistant entries.
        (!model.is_empty() && !model.starts_with('<')).then(|| model.to_string())
    })
}

/// Asks `model` the loop judge's `prompt` through the Anthropic API the hook's environment names; the
/// answer's text, or why there is none.
pub fn ask(prompt: &str, model: &str) -> Result<String, String> {
    let key = std::env::var("ANTHROPIC_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| {
            "no ANTHROPIC_API_KEY in the hook's environment (a subscription login has none a hook can use)"
                .to_string()
        })?;
    let mut config = AnthropicConfig::new(model, ApiKey::new(key.trim()));
    if let Ok(url) = std::env::var("ANTHROPIC_BASE_URL")
        && !url.trim().is_empty()
    {
        config.base_url = url.trim().to_string();
    }
    config.timeouts = Timeouts {
        connect: Duration::from_secs(5),
        read: TIMEOUT,
        request: TIMEOUT,
    };
    let client = AnthropicClient::new(config).map_err(|e| e.to_string())?;
    let request = Request {
        messages: vec![Message::user(prompt)],
        max_tokens: 200,
        ..Request::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        match tokio::time::timeout(TIMEOUT, agency_llm::complete(&client, &request)).await {
            Ok(Ok(response)) => Ok(response.text()),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err(format!("no answer within {} s", TIMEOUT.as_secs())),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_the_last_real_assistant_entry_of_the_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"assistant","message":{"model":"claude-old","content":[]}}"#,
            r#"{"type":"assistant","message":{"model":"claude-now","content":[]}}"#,
            r#"{"type":"assistant","message":{"model":"<synthetic>","content":[]}}"#,
            "not json",
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        assert_eq!(last_model(&path).as_deref(), Some("claude-now"));
        std::fs::write(&path, lines[0]).unwrap();
        assert_eq!(last_model(&path), None);
        assert_eq!(last_model(&dir.path().join("missing.jsonl")), None);
    }

    #[test]
    fn pi_and_codex_events_are_not_judged_here() {
        assert!(wanted(&serde_json::json!({"hook_event_name": "Stop"})));
        assert!(!wanted(&serde_json::json!({"loop_judge": true})));
        assert!(!wanted(&serde_json::json!({"turn_id": "t-1"})));
    }
}
