//! Rendering a brief into what its agent reads: the stable system blocks (personality, team rules, tier
//! prompt) and the first user message (goal anchor, task, variety and gates, contract, inputs, the output
//! schema, and what went wrong last time on a retry).

use std::borrow::Cow;
use std::fmt::Write as _;

use agency_core::Brief;
use agency_core::tiers::{BriefRole, output_schema};
use agency_exec::runtime::OutputCheck;
use agency_llm::CallMeta;
use serde_json::{Value, json};

use crate::prompts;

/// How many of [`system_blocks`] every agent of a role gets byte-identical: agency's rules and the tier's
/// prompt. A provider's prompt cache shares them between agents ([`agency_exec::runtime::AgentTask::
/// shared_system_blocks`]).
pub const SHARED_SYSTEM_BLOCKS: usize = 2;

/// The system blocks of a brief's agent: most stable first, so the cached prefix is as long as possible —
/// agency's rules, then the tier's prompt (the same bytes for every agent of a role), then the personality.
/// The personality comes after agency's own rules, so it adds a voice and expertise but cannot be read as
/// overriding the gate or the output schema. The prompts are compiled in and lent, not copied for every
/// agent.
pub fn system_blocks(role: BriefRole, personality: Option<&str>) -> Vec<Cow<'static, str>> {
    let mut blocks = Vec::with_capacity(SHARED_SYSTEM_BLOCKS + 1);
    blocks.push(Cow::Borrowed(prompts::COMMON));
    blocks.push(Cow::Borrowed(prompts::for_role(role)));
    if let Some(text) = personality {
        blocks.push(Cow::Owned(text.to_string()));
    }
    blocks
}

/// A named input the agent reads (an artifact's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The artifact name.
    pub name: String,
    /// Its text.
    pub text: String,
}

/// The first user message of a brief's agent.
pub fn render_prompt(brief: &Brief, inputs: &[Input], feedback: Option<&str>) -> String {
    let role = BriefRole::of(brief);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Brief \"{}\" — {} {} in workstream {}",
        brief.title,
        brief.tier.as_str().to_ascii_uppercase(),
        role.as_str(),
        brief.workstream
    );
    let _ = writeln!(
        out,
        "\nGoal anchor (the user's goal, verbatim): {}",
        brief.goal_anchor
    );
    let _ = writeln!(out, "\n## Your task\n{}", brief.instructions.trim());
    if let Some(variety) = brief.variety {
        let gates = variety.gates();
        let _ = writeln!(
            out,
            "\n## Variety\nnovelty {}, scope {}, uncertainty {}, risk {} → score {}: teachback {}, route {}",
            variety.novelty,
            variety.scope,
            variety.uncertainty,
            variety.risk,
            variety.score(),
            gates.teachback_mode.as_str(),
            gates.workflow_route
        );
        // Only a slice's commit is audited (see `signoff.rs`): the implementer is told, so it knows its
        // report will not be what convinces the second reviewer.
        if gates.auditor_required && brief.tier == agency_core::Tier::T4 {
            let _ = writeln!(
                out,
                "auditor required: besides the judge, an auditor signs off your commit without reading your report"
            );
        }
    }
    if let Some(contract) = &brief.contract {
        let _ = writeln!(out, "\n## Contract\ndone_when: {}", contract.done_when);
        if let Some(verify) = &contract.verify {
            let _ = writeln!(out, "verify: {verify}");
        }
        for mode in &contract.failure_modes {
            let _ = writeln!(out, "failure mode: {mode}");
        }
        for path in &contract.may_edit {
            let _ = writeln!(out, "may edit (protected): {path}");
        }
    }
    for input in inputs {
        let _ = writeln!(out, "\n## Input: {}\n{}", input.name, input.text.trim_end());
    }
    if role != BriefRole::Implementer {
        let schema = serde_json::to_string(&output_schema(role)).unwrap_or_default();
        let _ = writeln!(
            out,
            "\n## Output\nThe `output` of report_result must match this JSON Schema:\n{schema}"
        );
    }
    if let Some(feedback) = feedback {
        let _ = writeln!(
            out,
            "\n## Your previous attempt was not accepted\n{}",
            feedback.trim_end()
        );
    }
    out
}

/// The stable label scripted replies and logs name a brief by: `<workstream>/<tier>/<title>`, the same in
/// every run of the same plan.
pub fn brief_label(brief: &Brief) -> String {
    format!("{}/{}/{}", brief.workstream, brief.tier.as_str(), brief.title)
}

/// The call metadata for every model request a brief's agent makes.
pub fn call_meta(brief: &Brief) -> CallMeta {
    CallMeta {
        run: Some(brief.run),
        brief_id: Some(brief.id),
        brief: Some(brief_label(brief)),
        workstream: Some(brief.workstream.clone()),
        role: Some(BriefRole::of(brief).as_str().to_string()),
        tier: Some(brief.tier),
        attempt: brief.attempt,
    }
}

/// Writes the runner's facts over what a planner's output says of them: the run id and the goal anchor are
/// the runner's, not the model's, so the anchor stays verbatim whatever the model wrote there.
pub fn stamp_runner_facts(brief: &Brief, output: &mut Value) {
    if BriefRole::of(brief) != BriefRole::Plan {
        return;
    }
    if let Some(plan) = output.as_object_mut() {
        plan.insert("run_id".into(), json!(brief.run.to_string()));
        plan.insert("goal_anchor".into(), json!(brief.goal_anchor));
    }
}

/// The check the runner applies to a brief's report output ([`crate::advance::check_output`], after
/// [`stamp_runner_facts`]), lent to its agent so that a report that does not fit is fixed in the same
/// conversation. `None` for an implementer, whose output has no schema.
pub fn output_check(brief: &Brief) -> Option<OutputCheck> {
    let role = BriefRole::of(brief);
    if role == BriefRole::Implementer {
        return None;
    }
    let brief = brief.clone();
    Some(OutputCheck::new(move |output| {
        let mut output = output.clone();
        stamp_runner_facts(&brief, &mut output);
        crate::outputs::check_output(role, &output)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agency_core::brief::{BriefPlacement, NewBrief};
    use agency_core::{BriefId, RunId, Tier};

    #[test]
    fn call_meta_carries_the_briefs_own_attempt() {
        let mut brief = NewBrief {
            tier: Tier::T4,
            workstream: "ws-a".into(),
            title: "fix".into(),
            personality: None,
            instructions: "fix it".into(),
            inputs: Vec::new(),
            variety: None,
            contract: None,
            depends_on: Vec::new(),
        }
        .into_brief(BriefPlacement {
            id: BriefId::new(),
            run: RunId::new(),
            parent: None,
            goal_anchor: "goal".into(),
            retry_budget: 3,
            depends_on: Vec::new(),
            created_at: chrono::Utc::now(),
        });
        assert_eq!(call_meta(&brief).attempt, 0);
        brief.attempt = 2;
        let meta = call_meta(&brief);
        assert_eq!(meta.attempt, 2);
        assert_eq!(meta.brief.as_deref(), Some("ws-a/t4/fix"));
    }
}
