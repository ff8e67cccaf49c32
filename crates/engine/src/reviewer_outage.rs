//! A teachback reviewer's model in an outage: what the link keeps when it stops an agent for it
//! ([`crate::brief_link`]), and what the runner pauses the run with ([`crate::outage`]). A leaf, so the agent's
//! end ([`crate::crew`]) can carry it without importing the link.

use agency_core::Tier;
use agency_llm::LlmError;

/// A teachback reviewer's model in an outage: its provider still failed after retrying inside the call for
/// its `timeouts.outage_seconds`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewerOutage {
    /// The reviewing tier (the brief's parent).
    pub tier: Tier,
    /// The reviewer's model.
    pub model: String,
    /// The reviewer's provider (`anthropic`, `openai`, ...).
    pub provider: String,
    /// What the last attempt failed with.
    pub error: LlmError,
}

impl std::fmt::Display for ReviewerOutage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the teachback reviewer ({} model {} on {}): {}",
            self.tier.as_str(),
            self.model,
            self.provider,
            self.error
        )
    }
}
