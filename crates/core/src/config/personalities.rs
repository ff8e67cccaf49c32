//! The talent pool: agency-agents personality files, and which one fills each tier and domain.
//!
//! Personalities are named by file slug (`engineering-software-architect`), not display name. The engine
//! checks every configured slug exists in `dir` at start-up; here we only check their spelling.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tier::Tier;

/// The `personalities` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PersonalitiesConfig {
    /// A checkout of agency-agents (division folders of `.md` files), relative to the repository root;
    /// unset, agents run without a personality prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Default specialist per tier and workstream domain (lowercase), by personality slug; T1 may pick
    /// any other personality from `dir`.
    #[serde(deserialize_with = "super::null_as_default")]
    pub registry: BTreeMap<Tier, BTreeMap<String, String>>,
}

impl PersonalitiesConfig {
    /// The registry's personality slug for a tier and domain.
    pub fn personality_for(&self, tier: Tier, domain: &str) -> Option<&str> {
        self.registry
            .get(&tier)
            .and_then(|domains| domains.get(domain))
            .map(String::as_str)
    }
}

impl Default for PersonalitiesConfig {
    fn default() -> Self {
        // The design's default software-pipeline roster. T1 has none: `nexus-strategy` is a playbook,
        // not a personality, and T1 plans with agency's own prompt.
        let roster: [(Tier, &str, &str); 18] = [
            (Tier::T2, "backend", "engineering-software-architect"),
            (Tier::T2, "infra", "engineering-devops-automator"),
            (Tier::T2, "data", "engineering-data-engineer"),
            (Tier::T3, "backend", "engineering-senior-developer"),
            (Tier::T3, "reliability", "engineering-sre"),
            (Tier::T4, "frontend", "engineering-frontend-developer"),
            (Tier::T4, "backend", "engineering-backend-architect"),
            (Tier::T4, "database", "engineering-database-optimizer"),
            (Tier::T4, "devops", "engineering-devops-automator"),
            (Tier::T4, "mobile", "engineering-mobile-app-builder"),
            (Tier::T4, "ai", "engineering-ai-engineer"),
            (Tier::T4, "security", "engineering-security-engineer"),
            (Tier::T4, "docs", "engineering-technical-writer"),
            (Tier::T5, "code-review", "engineering-code-reviewer"),
            (Tier::T5, "integration", "testing-reality-checker"),
            (Tier::T5, "api", "testing-api-tester"),
            (Tier::T5, "performance", "testing-performance-benchmarker"),
            (Tier::T5, "security", "engineering-security-engineer"),
        ];
        let mut registry: BTreeMap<Tier, BTreeMap<String, String>> = BTreeMap::new();
        for (tier, domain, slug) in roster {
            registry
                .entry(tier)
                .or_default()
                .insert(domain.to_string(), slug.to_string());
        }
        PersonalitiesConfig { dir: None, registry }
    }
}
