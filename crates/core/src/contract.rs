//! The goal contract (pi-goals): what "done" means for a workstream or brief, in a form the orchestrator can
//! check without trusting the agent.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What done means, how it is checked, and how it usually goes wrong.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalContract {
    /// The observable condition that makes the work done.
    pub done_when: String,
    /// The command (argv words, run without a shell) whose exit status 0 is stage 1 of sign-off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// Ways this work is known to look done while it is not; the judge checks each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_modes: Vec<String>,
    /// Protected paths (tests, verify scripts) this work is nonetheless allowed to edit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_edit: Vec<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_done_when_is_required_and_empty_parts_are_not_written() {
        let contract: GoalContract =
            serde_json::from_value(json!({"done_when": "the API answers 200"})).unwrap();
        assert_eq!(
            contract,
            GoalContract {
                done_when: "the API answers 200".into(),
                ..GoalContract::default()
            }
        );
        assert_eq!(
            serde_json::to_value(&contract).unwrap(),
            json!({"done_when": "the API answers 200"})
        );
    }

    #[test]
    fn the_full_shape_round_trips_and_unknown_fields_are_refused() {
        let full = json!({
            "done_when": "webhooks are retried",
            "verify": "cargo test -p api",
            "failure_modes": ["retries forever", "drops on restart"],
            "may_edit": ["tests/webhook.rs"]
        });
        let contract: GoalContract = serde_json::from_value(full.clone()).unwrap();
        assert_eq!(serde_json::to_value(&contract).unwrap(), full);
        assert!(serde_json::from_value::<GoalContract>(json!({"done_when": "x", "done": true})).is_err());
        assert!(serde_json::from_value::<GoalContract>(json!({"verify": "make"})).is_err());
    }
}
