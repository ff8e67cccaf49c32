//! T5 verdicts and their consensus (seed 001). Each verifier judges one slice (`scope`) independently; the
//! squad lead (T3) folds the results into one joint verdict: pass marks the workstream done, partial retries
//! only the failed slices, fail escalates.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One verifier's verdict on its slice. Named `Verdict` in the output schema the verifier is given, as it
/// was before the type's name told it apart from the judge's and the tool gate's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Verdict")]
pub enum SliceVerdict {
    /// The slice does what its brief and the goal ask.
    Pass,
    /// It does not; `issues` says why.
    Fail,
}

/// One T5 result, as a verifier reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct T5Result {
    /// The verifier that produced it (its brief id).
    pub verifier_id: String,
    /// The slice it verified: the T4 brief's title (`queue-client`).
    pub scope: String,
    /// Pass or fail.
    pub verdict: SliceVerdict,
    /// What is wrong, one issue per item; the retry brief is built from these.
    #[serde(default)]
    pub issues: Vec<String>,
    /// A human-readable summary.
    #[serde(default)]
    pub notes: String,
}

/// The squad lead's consensus over all its verifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JointOutcome {
    /// Every slice passed: the workstream is done.
    Pass,
    /// Some slices failed: retry only those, then re-verify them.
    Partial,
    /// Every slice failed: escalate to the parent tier.
    Fail,
}

impl JointOutcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            JointOutcome::Pass => "pass",
            JointOutcome::Partial => "partial",
            JointOutcome::Fail => "fail",
        }
    }
}

/// T3's joint verdict, as written to the blackboard and shown at the `t5_verdict` gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JointVerdict {
    /// Every verifier's result, in the order given.
    pub t5_results: Vec<T5Result>,
    /// Pass, partial or fail.
    pub joint_verdict: JointOutcome,
    /// The scopes with at least one failing result, in first-seen order, each once.
    pub failed_scopes: Vec<String>,
    /// One line for the gate surface and the log.
    pub summary: String,
}

/// Why no joint verdict could be formed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    /// No verifier reported. Refused rather than read as a pass (nothing was verified) or a fail (nothing
    /// failed): the caller has a bug or a lost verifier, and must find out.
    #[error("no T5 results: a joint verdict needs at least one verifier's result")]
    NoResults,
}

/// Folds T5 results into the joint verdict. Consensus is per *scope*: a scope fails if any of its verifiers
/// failed it (two verifiers disagreeing is not a pass). No failed scope → pass; some → partial (retry just
/// those); all → fail (escalate). Empty input is [`VerdictError::NoResults`].
pub fn joint_verdict(results: Vec<T5Result>) -> Result<JointVerdict, VerdictError> {
    if results.is_empty() {
        return Err(VerdictError::NoResults);
    }
    let mut scopes: Vec<&str> = Vec::new();
    let mut failed_scopes: Vec<String> = Vec::new();
    let mut issue_count = 0;
    for result in &results {
        if !scopes.contains(&result.scope.as_str()) {
            scopes.push(&result.scope);
        }
        if result.verdict == SliceVerdict::Fail {
            issue_count += result.issues.len();
            if !failed_scopes.contains(&result.scope) {
                failed_scopes.push(result.scope.clone());
            }
        }
    }
    let joint = if failed_scopes.is_empty() {
        JointOutcome::Pass
    } else if failed_scopes.len() == scopes.len() {
        JointOutcome::Fail
    } else {
        JointOutcome::Partial
    };
    let passed = scopes.len() - failed_scopes.len();
    let summary = match joint {
        JointOutcome::Pass => format!(
            "pass: all {} scope(s) passed ({} verifier(s))",
            scopes.len(),
            results.len()
        ),
        JointOutcome::Partial | JointOutcome::Fail => format!(
            "{}: {passed} of {} scope(s) passed; failed: {} ({issue_count} issue(s))",
            joint.as_str(),
            scopes.len(),
            failed_scopes.join(", "),
        ),
    };
    Ok(JointVerdict {
        t5_results: results,
        joint_verdict: joint,
        failed_scopes,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(scope: &str, verdict: SliceVerdict, issues: &[&str]) -> T5Result {
        T5Result {
            verifier_id: format!("v-{scope}"),
            scope: scope.into(),
            verdict,
            issues: issues.iter().map(|s| s.to_string()).collect(),
            notes: String::new(),
        }
    }

    #[test]
    fn all_pass_is_pass() {
        let v = joint_verdict(vec![
            result("a", SliceVerdict::Pass, &[]),
            result("b", SliceVerdict::Pass, &[]),
        ])
        .unwrap();
        assert_eq!(v.joint_verdict, JointOutcome::Pass);
        assert!(v.failed_scopes.is_empty());
        assert_eq!(v.summary, "pass: all 2 scope(s) passed (2 verifier(s))");
        assert_eq!(v.t5_results.len(), 2);
    }

    #[test]
    fn some_fail_is_partial_naming_the_failed_scopes() {
        let v = joint_verdict(vec![
            result("a", SliceVerdict::Pass, &[]),
            result("b", SliceVerdict::Fail, &["off by one", "no test"]),
            result("c", SliceVerdict::Fail, &["panics on empty"]),
        ])
        .unwrap();
        assert_eq!(v.joint_verdict, JointOutcome::Partial);
        assert_eq!(v.failed_scopes, vec!["b", "c"]);
        assert_eq!(
            v.summary,
            "partial: 1 of 3 scope(s) passed; failed: b, c (3 issue(s))"
        );
    }

    #[test]
    fn all_fail_is_fail() {
        let v = joint_verdict(vec![
            result("a", SliceVerdict::Fail, &["x"]),
            result("b", SliceVerdict::Fail, &[]),
        ])
        .unwrap();
        assert_eq!(v.joint_verdict, JointOutcome::Fail);
        assert_eq!(v.failed_scopes, vec!["a", "b"]);
    }

    #[test]
    fn consensus_is_per_scope() {
        // Two verifiers disagree on the only scope: the scope failed, so the whole verdict fails.
        let v = joint_verdict(vec![
            result("a", SliceVerdict::Pass, &[]),
            result("a", SliceVerdict::Fail, &["x"]),
        ])
        .unwrap();
        assert_eq!(v.joint_verdict, JointOutcome::Fail);
        assert_eq!(v.failed_scopes, vec!["a"]);
        // A scope failed twice is listed once.
        let v = joint_verdict(vec![
            result("a", SliceVerdict::Fail, &["x"]),
            result("a", SliceVerdict::Fail, &["y"]),
            result("b", SliceVerdict::Pass, &[]),
        ])
        .unwrap();
        assert_eq!(v.joint_verdict, JointOutcome::Partial);
        assert_eq!(v.failed_scopes, vec!["a"]);
    }

    #[test]
    fn no_results_is_an_error() {
        assert_eq!(joint_verdict(vec![]), Err(VerdictError::NoResults));
    }

    #[test]
    fn wire_shapes_match_the_seed() {
        let r: T5Result = serde_json::from_value(serde_json::json!({
            "verifier_id": "0190f0a0-0000-7000-8000-000000000000",
            "scope": "queue-client",
            "verdict": "fail",
            "issues": ["issue description..."],
            "notes": "human-readable summary"
        }))
        .unwrap();
        let v = joint_verdict(vec![r]).unwrap();
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["joint_verdict"], "fail");
        assert_eq!(json["failed_scopes"], serde_json::json!(["queue-client"]));
        assert_eq!(json["t5_results"][0]["verdict"], "fail");
        assert!(
            serde_json::from_value::<T5Result>(serde_json::json!({
                "verifier_id": "v", "scope": "s", "verdict": "partial"
            }))
            .is_err()
        );
    }
}
