//! Checking a tier's structured output against its schema before the runner acts on it: the problems, one
//! per line, go back to the agent (or fail its brief) while the tier that wrote it can still correct them.

use agency_core::tiers::{
    AcceptOutput, ArbitrationOutput, BriefRole, ChildBrief, LeadOutput, SpecialistOutput, SquadOutput,
    SynthesisOutput, ValidationOutput, VerifierOutput, check_siblings, reserved_t2_title,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Checks a role's structured output against its schema; the problems, one per line, when it does not fit.
pub fn check_output(role: BriefRole, output: &Value) -> std::result::Result<(), String> {
    fn parse<T: DeserializeOwned>(output: &Value) -> std::result::Result<(), String> {
        serde_json::from_value::<T>(output.clone())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    match role {
        BriefRole::Plan => agency_core::validate_plan(output)
            .map_err(|e| e.to_string())
            .and_then(|plan| {
                runnable_verifies(
                    plan.workstreams
                        .iter()
                        .map(|ws| (format!("workstreams[{}]", ws.id), ws.contract.verify.as_deref())),
                )
            }),
        BriefRole::Accept => parse::<AcceptOutput>(output),
        BriefRole::Arbiter => parse::<ArbitrationOutput>(output),
        BriefRole::Validator => parse::<ValidationOutput>(output),
        BriefRole::Lead => parse::<LeadOutput>(output).and_then(|_| {
            let lead: LeadOutput = serde_json::from_value(output.clone()).map_err(|e| e.to_string())?;
            // A specialist titled like a lead or a synthesis would be taken for one.
            let reserved: Vec<String> = lead
                .specialists
                .iter()
                .enumerate()
                .filter(|(_, s)| reserved_t2_title(&s.title))
                .map(|(k, s)| {
                    format!(
                        "specialists[{k}].title: \"{}\" is a T2 role's title (lead, synthesis, \
                         amended-pass-<n>); name the specialist by its domain",
                        s.title
                    )
                })
                .collect();
            if !reserved.is_empty() {
                return Err(reserved.join("\n"));
            }
            siblings(&lead.specialists)
        }),
        BriefRole::Specialist => parse::<SpecialistOutput>(output).and_then(|_| {
            let spec: SpecialistOutput = serde_json::from_value(output.clone()).map_err(|e| e.to_string())?;
            declared_scope(&spec.files, &spec.interfaces).and_then(|()| siblings(&spec.squads))
        }),
        BriefRole::Synthesis => parse::<SynthesisOutput>(output),
        BriefRole::SquadLead => parse::<SquadOutput>(output).and_then(|_| {
            let squad: SquadOutput = serde_json::from_value(output.clone()).map_err(|e| e.to_string())?;
            siblings(&squad.tasks)
        }),
        BriefRole::Implementer => Ok(()),
        BriefRole::Verifier => parse::<VerifierOutput>(output),
    }
}

/// Every verify command among `commands` (each with where it is in the output) is one agency can run: it
/// runs without a shell, so a pipeline, a redirection or a substitution is refused here, where the tier
/// that wrote it can still correct it, instead of when its slice is verified.
fn runnable_verifies<'a>(
    commands: impl Iterator<Item = (String, Option<&'a str>)>,
) -> std::result::Result<(), String> {
    let problems: Vec<String> = commands
        .filter_map(|(at, command)| {
            let command = command?;
            agency_signoff::verify_command::verify_argv(command)
                .err()
                .map(|e| format!("{at}.contract.verify: {e}"))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// A specialist's declared `files` and `interfaces` (its side of the T2→T3 agreement check): each problem
/// with the field and index it is at.
fn declared_scope(files: &[String], interfaces: &[String]) -> std::result::Result<(), String> {
    let problems: Vec<String> = agency_core::plan::scope_path_problems(files)
        .into_iter()
        .map(|(k, p)| format!("files[{k}]: {p}"))
        .chain(
            agency_core::plan::scope_name_problems(interfaces)
                .into_iter()
                .map(|(k, p)| format!("interfaces[{k}]: {p}")),
        )
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn siblings(children: &[ChildBrief]) -> std::result::Result<(), String> {
    let verifies = runnable_verifies(children.iter().map(|c| {
        (
            format!("tasks[{}]", c.title),
            c.contract.as_ref().and_then(|k| k.verify.as_deref()),
        )
    }));
    let problems = check_siblings(children);
    match (problems.is_empty(), verifies) {
        (true, verifies) => verifies,
        (false, Ok(())) => Err(problems.join("\n")),
        (false, Err(more)) => Err(format!("{}\n{more}", problems.join("\n"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan_with_verify(verify: &str) -> Value {
        json!({
            "run_id": "0190f0a0-1234-7abc-8def-0123456789ab", "goal_anchor": "a goal", "complexity": "low",
            "retry_budget_multiplier": 1,
            "workstreams": [{
                "id": "ws-a", "name": "a", "domain": "core", "tier_path": ["t4", "t5"], "parallel_group": "A",
                "variety": {"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1},
                "contract": {"done_when": "done", "verify": verify}
            }],
            "parallelism": {"groups": {"A": ["ws-a"]}, "sequence": ["A"]},
            "self_critique_summary": "fine"
        })
    }

    #[test]
    fn a_lead_may_not_title_a_specialist_like_a_t2_role() {
        let lead = |title: &str| {
            json!({ "boundaries": [], "shared_assumptions": [], "specialists": [{
                "title": title, "instructions": "i", "variety": {"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1}
            }]})
        };
        check_output(BriefRole::Lead, &lead("backend")).unwrap();
        for reserved in ["lead", "synthesis", "amended-pass-2"] {
            let problem = check_output(BriefRole::Lead, &lead(reserved)).unwrap_err();
            assert!(
                problem.starts_with(&format!(
                    "specialists[0].title: \"{reserved}\" is a T2 role's title"
                )),
                "{problem}"
            );
        }
    }

    #[test]
    fn a_verify_command_that_needs_a_shell_is_refused_where_its_tier_can_correct_it() {
        let problem = check_output(BriefRole::Plan, &plan_with_verify("cargo test | tee log")).unwrap_err();
        assert!(
            problem.starts_with("workstreams[ws-a].contract.verify: ") && problem.contains("shell"),
            "{problem}"
        );
        check_output(BriefRole::Plan, &plan_with_verify("sh -c 'cargo test | tee log'")).unwrap();

        let squad = json!({ "tasks": [{
            "title": "t", "instructions": "i", "variety": {"novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1},
            "contract": { "done_when": "d", "verify": "make test > out" }
        }]});
        let problem = check_output(BriefRole::SquadLead, &squad).unwrap_err();
        assert!(problem.starts_with("tasks[t].contract.verify: "), "{problem}");
    }

    #[test]
    fn a_declared_scope_outside_the_repository_is_refused_and_an_old_output_still_reads() {
        let mut plan = plan_with_verify("sh test.sh");
        plan["workstreams"][0]["files"] = json!(["src/", "../secret"]);
        plan["workstreams"][0]["interfaces"] = json!(["GET /sum"]);
        let problem = check_output(BriefRole::Plan, &plan).unwrap_err();
        assert!(
            problem.contains("workstreams[0].files[1]") && problem.contains("leaves the repository"),
            "{problem}"
        );
        plan["workstreams"][0]["files"] = json!(["src/"]);
        check_output(BriefRole::Plan, &plan).unwrap();
        check_output(BriefRole::Plan, &plan_with_verify("sh test.sh")).unwrap();

        let spec = json!({ "architecture": "a", "squads": [], "files": ["/abs"], "interfaces": [" "] });
        let problem = check_output(BriefRole::Specialist, &spec).unwrap_err();
        assert_eq!(
            problem,
            "files[0]: \"/abs\" is absolute; expected a path relative to the repository\ninterfaces[0]: must not be empty"
        );
        check_output(
            BriefRole::Specialist,
            &json!({ "architecture": "a", "squads": [] }),
        )
        .unwrap();
    }
}
