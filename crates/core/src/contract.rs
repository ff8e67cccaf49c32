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
