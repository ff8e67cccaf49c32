//! The gate service as a runtime sees it. In a run the blackboard is in no agent's sandbox: a hook-gated
//! agent (Claude Code, Codex) reaches its teachback gate only through the runner's gate service, a unix
//! socket bound into its sandbox, with a capability — a random token the service accepts for that agent's
//! own brief and no other. The runtime asks its [`GateIssuer`] for one as the agent starts, passes the
//! socket and token in [`ENV_GATE_SOCKET`] and [`ENV_GATE_CAPABILITY`], and the capability is revoked when the
//! [`GateCapability`] drops (the agent has ended).
//!
//! The token is a secret: it is added to the agent's redactor, so no recorded event or log line holds it,
//! and the capability's `Debug` does not show it.
//!
//! The service is also the record of what the gate decided: every PreToolUse answer it gives under a
//! capability goes into that capability's [`DecisionRecord`], in the runner's memory, and the
//! gate-coverage audit ([`crate::runtime::coverage`]) compares the agent's event stream with it when the
//! agent has ended. Nothing the agent can write (its home, its sandbox) feeds that record.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agency_core::BriefId;
use serde::Deserialize;
use serde_json::Value;

use crate::process::CommandSpec;

/// One decision as the gate records it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GateDecision {
    /// The tool as the client named it (`Write`, `Bash`, `apply_patch`).
    pub tool_name: String,
    /// The client's id of the call.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// The call's input as the hook saw it.
    #[serde(default)]
    pub tool_input: Value,
    /// `allow` or `deny`.
    pub gate_decision: String,
}

impl GateDecision {
    /// The decision for a PreToolUse `event` (as the client sent it) that the gate answered with exit code
    /// `code` and `stdout`; `None` for another kind of event. A deny is exit 2, a `permissionDecision` of
    /// `deny` or a `decision` of `block`; anything else let the call run.
    pub fn of_answer(event: &Value, code: u8, stdout: &str) -> Option<GateDecision> {
        if event["hook_event_name"] != "PreToolUse" {
            return None;
        }
        let answer: Value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
        let denied = code == 2
            || answer["hookSpecificOutput"]["permissionDecision"] == "deny"
            || answer["decision"] == "block";
        Some(GateDecision {
            tool_name: event["tool_name"].as_str().unwrap_or_default().to_owned(),
            tool_use_id: event["tool_use_id"].as_str().map(str::to_owned),
            tool_input: event["tool_input"].clone(),
            gate_decision: if denied { "deny" } else { "allow" }.to_owned(),
        })
    }

    pub(crate) fn allowed(&self) -> bool {
        self.gate_decision == "allow"
    }
}

/// The gate service's socket, in a runner-spawned agent's environment.
pub const ENV_GATE_SOCKET: &str = "AGENCY_GATE_SOCKET";
/// The agent's capability (a random token scoped to its brief), in its environment. Not named `*TOKEN*`:
/// Codex keeps variables so named from the commands it runs, and `agency teachback submit` is one.
pub const ENV_GATE_CAPABILITY: &str = "AGENCY_GATE_CAPABILITY";

/// Issues capabilities: the runner's gate service.
pub trait GateIssuer: Send + Sync + fmt::Debug {
    /// A fresh capability for the agent working on `brief`, valid until it drops. An error (the service is
    /// not running) means the agent must not start: without it its gate cannot answer.
    fn issue(&self, brief: BriefId) -> Result<GateCapability, String>;
}

/// The decisions the gate service gave under one capability, in the order it gave them. Shared between the
/// service (which appends) and the runtime holding the capability (which audits); cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct DecisionRecord(Arc<Mutex<Vec<GateDecision>>>);

impl DecisionRecord {
    /// Appends one decision.
    pub fn push(&self, decision: GateDecision) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(decision);
    }

    /// Every decision so far.
    pub fn decisions(&self) -> Vec<GateDecision> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// One agent's access to the gate service: where the socket is and the token that proves which brief it
/// works on. Dropping it revokes the token.
pub struct GateCapability {
    socket: PathBuf,
    token: String,
    record: DecisionRecord,
    revoke: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl GateCapability {
    /// A capability for `socket` with `token`, whose decisions the service appends to `record`; `revoke`
    /// runs when it drops.
    pub fn new(
        socket: PathBuf,
        token: String,
        record: DecisionRecord,
        revoke: impl FnOnce() + Send + Sync + 'static,
    ) -> Self {
        GateCapability {
            socket,
            token,
            record,
            revoke: Some(Box::new(revoke)),
        }
    }

    /// What the service decided under this capability so far: the record the coverage audit reads.
    pub fn decisions(&self) -> Vec<GateDecision> {
        self.record.decisions()
    }

    /// The service's socket (bound into the agent's sandbox).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The token; a secret (see the module docs).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `spec` with the socket and token in its environment.
    pub fn apply(&self, spec: CommandSpec) -> CommandSpec {
        spec.env(ENV_GATE_SOCKET, self.socket.as_os_str())
            .env(ENV_GATE_CAPABILITY, self.token.as_str())
    }
}

impl Drop for GateCapability {
    fn drop(&mut self) {
        if let Some(revoke) = self.revoke.take() {
            revoke();
        }
    }
}

impl fmt::Debug for GateCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GateCapability")
            .field("socket", &self.socket)
            .field("token", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn dropping_revokes_and_debug_hides_the_token() {
        let revoked = Arc::new(AtomicBool::new(false));
        let flag = revoked.clone();
        let capability = GateCapability::new(
            "/s".into(),
            "sekrit-token".into(),
            DecisionRecord::default(),
            move || {
                flag.store(true, Ordering::SeqCst);
            },
        );
        assert!(!format!("{capability:?}").contains("sekrit-token"));
        assert!(!revoked.load(Ordering::SeqCst));
        drop(capability);
        assert!(revoked.load(Ordering::SeqCst));
    }
}
