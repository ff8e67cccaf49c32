//! The model-facing texts, compiled in from `prompts/` at the repository root so a release carries exactly
//! these bytes. They never contain anything that changes between turns (prompt caches depend on it).

use agency_core::tiers::BriefRole;

/// Rules every agent follows.
pub const COMMON: &str = include_str!("../../../prompts/common.md");
/// The parent tier reviewing a blocking teachback.
pub const TEACHBACK_REVIEW: &str = include_str!("../../../prompts/teachback-review.md");
/// The handing-over tier asked whether a significant agreement mismatch is fine.
pub const AGREEMENT_CONFIRM: &str = include_str!("../../../prompts/agreement-confirm.md");

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

#[cfg(test)]
mod tests {
    use super::*;
    use agency_core::tiers::output_schema;

    /// The tiers that plan and negotiate (T1–T3), whose prompts once claimed what the runner did not do.
    const NEGOTIATING: [BriefRole; 8] = [
        BriefRole::Plan,
        BriefRole::Accept,
        BriefRole::Arbiter,
        BriefRole::Validator,
        BriefRole::Lead,
        BriefRole::Specialist,
        BriefRole::Synthesis,
        BriefRole::SquadLead,
    ];

    /// Wording of claims a prompt made while the runner lacked the behaviour (issue 28). Each must stay
    /// out unless the behaviour it describes is built exactly as worded.
    const FALSE_CLAIMS: &[(&str, &str)] = &[
        (
            "publish their drafts as inputs",
            "peers' drafts are inputs only from a squad's second mesh round on, never its first",
        ),
        ("auditor", "no second, independent review runs (issue 29)"),
        (
            "non-empty asks for another",
            "conflicts go back to the specialists, not to another synthesis of the same inputs",
        ),
    ];

    #[test]
    fn no_t1_to_t3_prompt_makes_a_known_false_claim() {
        for role in NEGOTIATING {
            let prompt = for_role(role).to_lowercase();
            for (claim, why) in FALSE_CLAIMS {
                assert!(
                    !prompt.contains(claim),
                    "the {} prompt says \"{claim}\", which is not true: {why}",
                    role.as_str()
                );
            }
        }
    }

    /// Every field of a role's output that the runner reads is named in its prompt: a field the model is
    /// never told of is one the runner acts on without the agent knowing (the mesh's `files`, the
    /// synthesis's `unresolved_conflicts`, T1's `valid`).
    #[test]
    fn every_output_field_the_runner_reads_is_named_in_its_prompt() {
        for role in NEGOTIATING
            .into_iter()
            .filter(|r| !matches!(r, BriefRole::Plan | BriefRole::Accept))
        {
            let schema = output_schema(role);
            let fields = schema["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{} has an object schema", role.as_str()));
            for field in fields.keys() {
                assert!(
                    for_role(role).contains(field.as_str()),
                    "the {} prompt never names its output field `{field}`",
                    role.as_str()
                );
            }
        }
    }
}
