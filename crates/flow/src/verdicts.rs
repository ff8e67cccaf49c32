//! A squad's joint verdict: once every current slice of a squad is signed off, their verdicts together
//! decide — all pass merges the slices into the workstream branch, some fail retries only those with what
//! their sign-off found missing, all fail escalates. An optional `t5_verdict` gate lets a human review the
//! joint verdict first, and overrule it.

use agency_core::gate::GateStatus;
use agency_core::verdict::{JointOutcome, JointVerdict, SliceVerdict, T5Result, VerdictError, joint_verdict};

/// What a squad's joint verdict does.
#[derive(Debug, Clone, PartialEq)]
pub enum SquadVerdict {
    /// The `t5_verdict` gate is on and was never opened for this round: open it showing `joint`.
    OpenGate { joint: JointVerdict },
    /// Its gate waits for a human.
    AwaitGate,
    /// A human rejected the joint verdict at its gate: every slice is retried with `why`, and the round's
    /// verifiers are done.
    Overruled { why: String },
    /// Every slice passed: record the verdict, merge the slices, and the verifiers are done.
    Pass { joint: JointVerdict, line: String },
    /// Some slices failed: record the verdict, retry each of `retries` (a slice's title and what its
    /// sign-off found missing), and the verifiers are done.
    Partial {
        joint: JointVerdict,
        line: String,
        retries: Vec<SliceRetry>,
    },
    /// Every slice failed: record the verdict, the verifiers are done, and the squad's first task
    /// escalates (a T5 fail) with `why`.
    Fail {
        joint: JointVerdict,
        line: String,
        why: String,
    },
}

/// A rejected slice to retry: its title (the verdict's scope) and the feedback its next attempt starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceRetry {
    pub scope: String,
    pub why: String,
}

/// The joint verdict of a squad whose verifiers reported `results`, given whether the `t5_verdict` gate is
/// on and the newest such gate opened for this round (`workstream` names the squad in the log line).
pub fn squad_verdict(
    workstream: &str,
    gate_enabled: bool,
    gate: Option<GateStatus>,
    results: Vec<T5Result>,
) -> Result<SquadVerdict, VerdictError> {
    let count = results.len();
    let joint = joint_verdict(results)?;
    if gate_enabled {
        match gate {
            None => return Ok(SquadVerdict::OpenGate { joint }),
            Some(GateStatus::Pending) => return Ok(SquadVerdict::AwaitGate),
            Some(GateStatus::Rejected) => {
                return Ok(SquadVerdict::Overruled {
                    why: "a human rejected the joint verdict".into(),
                });
            }
            Some(GateStatus::Approved) => {}
        }
    }
    Ok(match joint.joint_verdict {
        JointOutcome::Pass => SquadVerdict::Pass {
            line: format!("✓  all pass — {workstream}: {count} slice(s) verified"),
            joint,
        },
        JointOutcome::Partial => {
            let verb = if joint.failed_scopes.len() == 1 {
                "needs"
            } else {
                "need"
            };
            let line = format!("partial — {} {verb} rework", joint.failed_scopes.join(", "));
            let retries = joint
                .t5_results
                .iter()
                .filter(|r| r.verdict == SliceVerdict::Fail)
                .map(|r| {
                    let issues: Vec<String> = r.issues.iter().map(|i| format!("- {i}")).collect();
                    SliceRetry {
                        scope: r.scope.clone(),
                        why: format!(
                            "The sign-off rejected this slice. Missing:\n{}\n{}",
                            issues.join("\n"),
                            r.notes
                        ),
                    }
                })
                .collect();
            SquadVerdict::Partial { joint, line, retries }
        }
        JointOutcome::Fail => {
            let issues: Vec<String> = joint
                .t5_results
                .iter()
                .flat_map(|r| r.issues.iter().map(move |i| format!("{}: {i}", r.scope)))
                .collect();
            SquadVerdict::Fail {
                line: format!("fail — every slice of {workstream} failed"),
                why: format!("every slice failed verification:\n{}", issues.join("\n")),
                joint,
            }
        }
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
            issues: issues.iter().map(|i| i.to_string()).collect(),
            notes: format!("notes of {scope}"),
        }
    }

    #[test]
    fn all_pass_merges_some_fail_retries_those_all_fail_escalates() {
        let pass = squad_verdict(
            "ws",
            false,
            None,
            vec![
                result("a", SliceVerdict::Pass, &[]),
                result("b", SliceVerdict::Pass, &[]),
            ],
        )
        .unwrap();
        assert!(
            matches!(&pass, SquadVerdict::Pass { line, .. } if line == "✓  all pass — ws: 2 slice(s) verified")
        );

        let partial = squad_verdict(
            "ws",
            false,
            None,
            vec![
                result("a", SliceVerdict::Pass, &[]),
                result("b", SliceVerdict::Fail, &["no test"]),
            ],
        )
        .unwrap();
        let SquadVerdict::Partial { line, retries, .. } = partial else {
            panic!("{partial:?}")
        };
        assert_eq!(line, "partial — b needs rework");
        assert_eq!(
            retries,
            [SliceRetry {
                scope: "b".into(),
                why: "The sign-off rejected this slice. Missing:\n- no test\nnotes of b".into()
            }]
        );

        let fail = squad_verdict(
            "ws",
            false,
            None,
            vec![
                result("a", SliceVerdict::Fail, &["x"]),
                result("b", SliceVerdict::Fail, &["y"]),
            ],
        )
        .unwrap();
        let SquadVerdict::Fail { line, why, .. } = fail else {
            panic!("{fail:?}")
        };
        assert_eq!(line, "fail — every slice of ws failed");
        assert_eq!(why, "every slice failed verification:\na: x\nb: y");
    }

    #[test]
    fn the_verdict_gate_is_opened_waited_on_and_may_overrule_the_verifiers() {
        let results = || vec![result("a", SliceVerdict::Pass, &[])];
        assert!(matches!(
            squad_verdict("ws", true, None, results()).unwrap(),
            SquadVerdict::OpenGate { .. }
        ));
        assert_eq!(
            squad_verdict("ws", true, Some(GateStatus::Pending), results()).unwrap(),
            SquadVerdict::AwaitGate
        );
        assert!(matches!(
            squad_verdict("ws", true, Some(GateStatus::Rejected), results()).unwrap(),
            SquadVerdict::Overruled { .. }
        ));
        assert!(matches!(
            squad_verdict("ws", true, Some(GateStatus::Approved), results()).unwrap(),
            SquadVerdict::Pass { .. }
        ));
        assert!(
            squad_verdict("ws", false, None, vec![]).is_err(),
            "no results, no verdict"
        );
    }
}
