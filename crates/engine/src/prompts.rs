//! The model-facing texts, compiled in from `prompts/` at the repository root so a release carries exactly
//! these bytes. They never contain anything that changes between turns (prompt caches depend on it).

use agency_core::tiers::BriefRole;

/// Rules every agent follows.
pub const COMMON: &str = include_str!("../../../prompts/common.md");
/// The parent tier reviewing a blocking teachback.
pub const TEACHBACK_REVIEW: &str = include_str!("../../../prompts/teachback-review.md");

/// The tier prompt for a role.
pub fn for_role(role: BriefRole) -> &'static str {
    match role {
        BriefRole::Plan => include_str!("../../../prompts/t1-plan.md"),
        BriefRole::Accept => include_str!("../../../prompts/t1-accept.md"),
        BriefRole::Arbiter => include_str!("../../../prompts/t1-arbitrate.md"),
        BriefRole::Validator => include_str!("../../../prompts/t1-validate.md"),
        BriefRole::Lead => include_str!("../../../prompts/t2-lead.md"),
        BriefRole::Specialist => include_str!("../../../prompts/t2-specialist.md"),
        BriefRole::Synthesis => include_str!("../../../prompts/t2-synthesis.md"),
        BriefRole::SquadLead => include_str!("../../../prompts/t3-squad.md"),
        BriefRole::Implementer => include_str!("../../../prompts/t4-implement.md"),
        BriefRole::Verifier => include_str!("../../../prompts/t5-verify.md"),
    }
}
