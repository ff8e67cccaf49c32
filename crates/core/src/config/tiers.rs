//! Per-tier settings: which capability level a tier thinks with, which runtime runs its agents, and how
//! many may run at once.
//!
//! Each field is optional in the file and falls back to the tier's own default from the design (T1/T2
//! reasoning-heavy, T3/T5 capable, T4 fast-cheap; T1–T3 on the built-in loop, T4/T5 on `auto`), so
//! `t4: {concurrency: 2}` keeps T4's capability and runtime. Read them through [`TiersConfig::capability`]
//! and [`TiersConfig::runtime`], which apply that fallback.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::models::CapabilityLevel;
use crate::tier::Tier;

/// Which agent runtime spawns a tier's agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// agency's own agent loop on the configured LLM API, with confined tools.
    Builtin,
    /// The Claude Code CLI.
    ClaudeCode,
    /// The Codex CLI.
    Codex,
    /// The pi coding agent.
    Pi,
    /// Any other program, started with the tier's `command` argv.
    Command,
    /// Claude Code when it is on PATH, else the built-in loop.
    Auto,
}

impl Runtime {
    /// The concrete runtime: `auto` becomes Claude Code when it is installed, else built-in; others stay.
    /// The caller looks at PATH; this stays pure.
    pub fn resolve(self, claude_code_on_path: bool) -> Runtime {
        match self {
            Runtime::Auto if claude_code_on_path => Runtime::ClaudeCode,
            Runtime::Auto => Runtime::Builtin,
            other => other,
        }
    }

    /// The name written in team.yaml.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Builtin => "builtin",
            Runtime::ClaudeCode => "claude-code",
            Runtime::Codex => "codex",
            Runtime::Pi => "pi",
            Runtime::Command => "command",
            Runtime::Auto => "auto",
        }
    }
}

/// One tier's settings; an unset field takes the tier's default.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TierConfig {
    /// The capability level whose model this tier uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability: Option<CapabilityLevel>,
    /// The runtime that spawns this tier's agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    /// The argv to start for `runtime: command` (the brief arrives on stdin); only valid with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// At most this many of this tier's agents at once; unset, only `runner.concurrency` bounds them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

/// The `tiers` section: one entry per tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TiersConfig {
    /// Visionary: plan and final acceptance.
    #[serde(deserialize_with = "super::null_as_default")]
    pub t1: TierConfig,
    /// Architect: design and interface contracts.
    #[serde(deserialize_with = "super::null_as_default")]
    pub t2: TierConfig,
    /// Squad lead: task split and joint verdicts.
    #[serde(deserialize_with = "super::null_as_default")]
    pub t3: TierConfig,
    /// Implementer: atomic tasks.
    #[serde(deserialize_with = "super::null_as_default")]
    pub t4: TierConfig,
    /// Verifier: checks T4 output.
    #[serde(deserialize_with = "super::null_as_default")]
    pub t5: TierConfig,
}

impl Default for TiersConfig {
    fn default() -> Self {
        let explicit = |tier| TierConfig {
            capability: Some(default_capability(tier)),
            runtime: Some(default_runtime(tier)),
            command: None,
            concurrency: None,
        };
        TiersConfig {
            t1: explicit(Tier::T1),
            t2: explicit(Tier::T2),
            t3: explicit(Tier::T3),
            t4: explicit(Tier::T4),
            t5: explicit(Tier::T5),
        }
    }
}

impl TiersConfig {
    /// One tier's settings as written.
    pub fn get(&self, tier: Tier) -> &TierConfig {
        match tier {
            Tier::T1 => &self.t1,
            Tier::T2 => &self.t2,
            Tier::T3 => &self.t3,
            Tier::T4 => &self.t4,
            Tier::T5 => &self.t5,
        }
    }

    /// The capability level a tier uses, its default when unset.
    pub fn capability(&self, tier: Tier) -> CapabilityLevel {
        self.get(tier)
            .capability
            .unwrap_or_else(|| default_capability(tier))
    }

    /// The runtime a tier uses (possibly `auto`, see [`Runtime::resolve`]), its default when unset.
    pub fn runtime(&self, tier: Tier) -> Runtime {
        self.get(tier).runtime.unwrap_or_else(|| default_runtime(tier))
    }
}

/// The design's capability level for a tier.
pub fn default_capability(tier: Tier) -> CapabilityLevel {
    match tier {
        Tier::T1 | Tier::T2 => CapabilityLevel::ReasoningHeavy,
        Tier::T3 | Tier::T5 => CapabilityLevel::Capable,
        Tier::T4 => CapabilityLevel::FastCheap,
    }
}

/// The design's runtime for a tier: coding agents do the hands-on work of T4 and T5 when available.
pub fn default_runtime(tier: Tier) -> Runtime {
    match tier {
        Tier::T1 | Tier::T2 | Tier::T3 => Runtime::Builtin,
        Tier::T4 | Tier::T5 => Runtime::Auto,
    }
}
