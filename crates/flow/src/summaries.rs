//! What a human reads at a tier's gate: a line saying what waits, what the tier produced, what happens
//! on approval, and what it flags (a squad lead's notes, a synthesis's unresolved conflicts). Built here
//! from the tier's stored output and the children it would write; the engine's gate executor
//! (`crates/engine/src/advance/gates.rs`) adds what the blackboard says since the previous gate (the
//! undecided path amendments, the anomalies recorded) and opens the gate with it.

use agency_core::Tier;
use agency_core::tiers::Conflict;
use agency_core::verdict::JointVerdict;
use serde::Serialize;
use serde_json::Value;

/// A gate's summary as the blackboard keeps it (`gates.summary`) and `agency inspect`, the dashboard
/// and the notifiers show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateSummary {
    /// The line a human reads first: what waits for a decision.
    pub message: String,
    /// What the tier produced (its stored output), or what the gate is about (the plan, the verdict).
    pub produced: Value,
    /// What approval starts, one line each (`t3 parser`).
    pub next: Vec<String>,
    /// What the human should look at before approving.
    pub anomalies: Vec<String>,
}

impl GateSummary {
    /// The summary as JSON, with its four keys always there.
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "message": self.message,
            "produced": self.produced,
            "next": self.next,
            "anomalies": self.anomalies,
        })
    }
}

/// The summary of a tier's gate: `produced`, its stored output (`Value::Null` when there is none or it
/// does not read), what it flags ([`anomalies_of`]), and `next`.
pub fn tier_summary(message: String, produced: Value, next: Vec<String>) -> GateSummary {
    let anomalies = anomalies_of(&produced);
    GateSummary {
        message,
        produced,
        next,
        anomalies,
    }
}

/// The line at the gate of a tier whose children are written once it is approved (`T2 api ready for
/// review`).
pub fn ready_for_review(tier: Tier, title: &str) -> String {
    format!("{} {title} ready for review", tier.as_str().to_ascii_uppercase())
}

/// What approving a gate starts: one line per child brief (`t3 parser`), in their order.
pub fn next_briefs<'a>(children: impl IntoIterator<Item = (Tier, &'a str)>) -> Vec<String> {
    children
        .into_iter()
        .map(|(tier, title)| format!("{tier} {title}"))
        .collect()
}

/// The summary of a squad's `t5_verdict` gate: the joint verdict as `produced`, nothing next (approval
/// carries it out), no anomalies of its own.
pub fn verdict_summary(workstream: &str, joint: &JointVerdict) -> GateSummary {
    GateSummary {
        message: format!(
            "T5 joint verdict for {workstream}: {}",
            joint.joint_verdict.as_str()
        ),
        // A plain struct of strings and lists: serialising it cannot fail.
        produced: serde_json::to_value(joint).unwrap_or_default(),
        next: Vec::new(),
        anomalies: Vec::new(),
    }
}

/// What a tier's output flags for the human: the conflicts a synthesis left unresolved
/// (`SynthesisOutput.unresolved_conflicts`), then a squad lead's notes (`SquadOutput.notes`: overlaps it
/// resolved, anomalies it wants seen). A conflict that does not read as one is still shown, as its JSON,
/// rather than dropped; a blank note is left out.
pub fn anomalies_of(produced: &Value) -> Vec<String> {
    let list = |key: &str| -> &[Value] {
        produced
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    };
    let mut flagged: Vec<String> = list("unresolved_conflicts")
        .iter()
        .map(|c| match serde_json::from_value::<Conflict>(c.clone()) {
            Ok(conflict) => {
                let sides: Vec<String> = conflict
                    .positions
                    .iter()
                    .map(|p| format!("{}: {}", p.specialist, p.position))
                    .collect();
                format!("unresolved conflict: {} ({})", conflict.about, sides.join("; "))
            }
            Err(_) => format!("unresolved conflict: {c}"),
        })
        .collect();
    flagged.extend(
        list("notes")
            .iter()
            .filter_map(Value::as_str)
            .filter(|note| !note.trim().is_empty())
            .map(|note| format!("squad note: {note}")),
    );
    flagged
}

#[cfg(test)]
mod tests {
    use super::*;
    use agency_core::verdict::{SliceVerdict, T5Result, joint_verdict};
    use serde_json::json;

    #[test]
    fn a_summary_always_has_its_four_keys() {
        let summary = tier_summary("T3 a ready for review".into(), Value::Null, vec![]);
        assert_eq!(
            summary.to_value(),
            json!({ "message": "T3 a ready for review", "produced": null, "next": [], "anomalies": [] })
        );
    }

    #[test]
    fn conflicts_then_notes_are_flagged() {
        let produced = json!({
            "notes": ["tasks 2 and 3 both touch the parser", "  ", 7],
            "unresolved_conflicts": [
                { "about": "the queue's message format",
                  "positions": [ { "specialist": "api", "position": "JSON" },
                                 { "specialist": "store", "position": "protobuf" } ] },
                { "about": "missing its positions" },
            ],
        });
        let summary = tier_summary("m".into(), produced.clone(), vec!["t4 a".into()]);
        assert_eq!(
            summary.anomalies,
            vec![
                "unresolved conflict: the queue's message format (api: JSON; store: protobuf)".to_string(),
                format!(
                    "unresolved conflict: {}",
                    json!({ "about": "missing its positions" })
                ),
                "squad note: tasks 2 and 3 both touch the parser".to_string(),
            ]
        );
        assert_eq!(summary.produced, produced);
        assert_eq!(summary.next, vec!["t4 a".to_string()]);
    }

    #[test]
    fn an_output_that_flags_nothing_or_is_not_an_object_has_no_anomalies() {
        for produced in [
            Value::Null,
            json!("text"),
            json!([1, 2]),
            json!({ "notes": "not a list" }),
            json!({ "notes": [], "unresolved_conflicts": [] }),
        ] {
            assert!(anomalies_of(&produced).is_empty(), "{produced}");
        }
    }

    #[test]
    fn the_lines_name_the_tier_and_the_children() {
        assert_eq!(ready_for_review(Tier::T3, "parser"), "T3 parser ready for review");
        assert_eq!(
            next_briefs([(Tier::T4, "lexer"), (Tier::T4, "parser")]),
            vec!["t4 lexer".to_string(), "t4 parser".to_string()]
        );
        assert!(next_briefs(std::iter::empty()).is_empty());
    }

    #[test]
    fn a_verdict_gate_shows_the_joint_verdict() {
        let result = |scope: &str, verdict| T5Result {
            verifier_id: format!("v-{scope}"),
            scope: scope.into(),
            verdict,
            issues: vec![],
            notes: String::new(),
        };
        let joint = joint_verdict(vec![
            result("a", SliceVerdict::Pass),
            result("b", SliceVerdict::Fail),
        ])
        .unwrap();
        let summary = verdict_summary("ws-a", &joint);
        assert_eq!(summary.message, "T5 joint verdict for ws-a: partial");
        assert_eq!(summary.produced, serde_json::to_value(&joint).unwrap());
        assert!(summary.next.is_empty() && summary.anomalies.is_empty());
    }
}
