//! The `sandbox` section: the OS sandbox every agent process and verify command runs in (bubblewrap; see
//! docs/security.md). On unless team.yaml turns it off; a machine that cannot set it up refuses to start
//! agents that run commands rather than run them bare.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `sandbox` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// `on` (default): every agent process and verify command is sandboxed, and none starts where the
    /// sandbox cannot be set up. `off`: nothing is sandboxed, and the run's log says so.
    pub mode: SandboxMode,
    /// `full` (default): the host's network. `none`: no network at all inside the sandbox.
    pub network: SandboxNetwork,
    /// The bubblewrap program: a name looked up on PATH, or a path. Default `bwrap`.
    pub program: String,
    /// More paths agents may read although they are hidden (absolute, or `~/` for the runner's HOME).
    pub extra_readable: Vec<String>,
    /// More paths agents may write (absolute, or `~/`): a shared package cache, say.
    pub extra_writable: Vec<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            mode: SandboxMode::On,
            network: SandboxNetwork::Full,
            program: "bwrap".into(),
            extra_readable: Vec::new(),
            extra_writable: Vec::new(),
        }
    }
}

/// Whether agents are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Sandboxed; fail closed where the sandbox cannot be set up.
    On,
    /// Not sandboxed: agents can read and change everything the runner can.
    Off,
}

/// The line every gate of a run with `sandbox.mode: off` carries, on every surface that shows the gate (the
/// run's log, `agency approve` and `agency show`, the dashboard, notifications): its agents were not
/// confined, so nothing they did was kept from the gates.
pub const SANDBOX_OFF_BANNER: &str = "SANDBOX OFF: this run's agents run unconfined (team.yaml `sandbox.mode: \
off`): they can read the blackboard and the runner's environment and write wherever the runner can, gates \
and records included";

/// Whether a run's recorded configuration (the JSON snapshot a team run starts with) had
/// `sandbox.mode: off`.
pub fn sandbox_off_in(config: &serde_json::Value) -> bool {
    config["sandbox"]["mode"] == "off"
}

/// The network inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// The host's network.
    Full,
    /// None.
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_says_the_sandbox_was_off_only_when_it_was() {
        let off = crate::config::TeamConfig {
            sandbox: SandboxConfig {
                mode: SandboxMode::Off,
                ..SandboxConfig::default()
            },
            ..crate::config::TeamConfig::default()
        };
        assert!(sandbox_off_in(&serde_json::to_value(&off).unwrap()));
        let on = crate::config::TeamConfig::default();
        assert!(!sandbox_off_in(&serde_json::to_value(&on).unwrap()));
        assert!(!sandbox_off_in(&serde_json::json!({})));
    }
}
