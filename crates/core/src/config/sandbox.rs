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

/// The network inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// The host's network.
    Full,
    /// None.
    None,
}
