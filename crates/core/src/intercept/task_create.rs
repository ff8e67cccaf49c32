//! TaskCreate validation (seed 000 §3): a task handed to an agent must carry its variety dimensions in
//! `metadata.variety_dimensions`, so its gates come from the scorer, not from the orchestrator's head. The
//! hook answers a valid TaskCreate with the same input plus `metadata.variety_score` and `metadata.gates`.

use serde_json::{Map, Value};

use crate::variety::Variety;

/// The metadata shape quoted when a TaskCreate is refused.
pub const METADATA_SHAPE: &str = r#"{"metadata": {"variety_dimensions": {"novelty": 1-4, "scope": 1-4, "uncertainty": 1-4, "risk": 1-4}}} (variety_score and gates are filled in for you)"#;

/// Checks a TaskCreate `tool_input` and returns the input to run instead: the same, with
/// `metadata.variety_score` and `metadata.gates` derived from the dimensions. The error is the reason to
/// give the agent.
pub fn validate(input: &Value) -> Result<Value, String> {
    let refuse = |what: String| Err(format!("TaskCreate refused: {what}. Expected {METADATA_SHAPE}."));
    let Some(fields) = input.as_object() else {
        return refuse("tool_input is not an object".into());
    };
    let metadata = match fields.get("metadata") {
        Some(Value::Object(m)) => m,
        Some(_) => return refuse("metadata is not an object".into()),
        None => return refuse("metadata.variety_dimensions is missing".into()),
    };
    let Some(dimensions) = metadata.get("variety_dimensions") else {
        return refuse("metadata.variety_dimensions is missing".into());
    };
    let variety = match Variety::from_json(dimensions) {
        Ok(v) => v,
        Err(err) => return refuse(format!("metadata.variety_dimensions: {err}")),
    };
    let score = variety.score();
    // A hand-computed score that disagrees with the dimensions is the discretion leak seed 000 names.
    if let Some(given) = metadata.get("variety_score")
        && given.as_u64() != Some(u64::from(score))
    {
        return refuse(format!(
            "metadata.variety_score is {given} but the dimensions sum to {score}; leave it out and it is computed"
        ));
    }
    let mut metadata: Map<String, Value> = metadata.clone();
    metadata.insert("variety_score".into(), Value::from(score));
    metadata.insert(
        "gates".into(),
        serde_json::to_value(variety.gates()).unwrap_or(Value::Null),
    );
    let mut updated = fields.clone();
    updated.insert("metadata".into(), Value::Object(metadata));
    Ok(Value::Object(updated))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn adds_score_and_gates() {
        let input = json!({"subject": "t", "description": "d",
            "metadata": {"variety_dimensions": {"novelty": 2, "scope": 2, "uncertainty": 1, "risk": 2}}});
        let out = validate(&input).unwrap();
        assert_eq!(out["metadata"]["variety_score"], 7);
        assert_eq!(out["metadata"]["gates"]["teachback_mode"], "blocking");
        assert_eq!(out["metadata"]["gates"]["auditor_required"], true);
        assert_eq!(out["metadata"]["gates"]["workflow_route"], "orchestrate");
        assert_eq!(out["subject"], "t");
        let low = json!({"metadata": {"variety_dimensions": {"novelty": 2, "scope": 2, "uncertainty": 1, "risk": 1}}});
        assert_eq!(
            validate(&low).unwrap()["metadata"]["gates"]["teachback_mode"],
            "advisory"
        );
    }

    #[test]
    fn missing_dimensions_show_the_shape() {
        for input in [
            json!({"subject": "t"}),
            json!({"metadata": {"variety_score": 7}}),
            json!(3),
        ] {
            let err = validate(&input).unwrap_err();
            assert!(err.contains("variety_dimensions"), "{err}");
            assert!(err.contains(r#""novelty": 1-4"#), "{err}");
        }
    }

    #[test]
    fn bad_dimensions_and_hand_scores_are_refused() {
        let bad = json!({"metadata": {"variety_dimensions": {"novelty": 5, "scope": 2, "uncertainty": 1, "risk": 2}}});
        assert!(validate(&bad).unwrap_err().contains("novelty"));
        let hand = json!({"metadata": {"variety_score": 9,
            "variety_dimensions": {"novelty": 2, "scope": 2, "uncertainty": 1, "risk": 2}}});
        assert!(validate(&hand).unwrap_err().contains("sum to 7"));
    }
}
