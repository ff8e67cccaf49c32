//! What a budget's exhaustion and a human's answer to it do. A model call that would pass a limit is
//! refused before it is made and opens one `budget` gate (a second refusal while it waits opens none).
//! A decided gate is acted on once: approving raises the exhausted limit (doubled, or what the human's
//! note names: `tokens=500000`, `usd=12.5`), rejecting stops the run.

use agency_core::gate::GateStatus;

/// A limit as the ledger keeps it: tokens, money, either or both.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Limit {
    /// All tokens.
    pub tokens: Option<u64>,
    /// Money, in USD.
    pub usd: Option<f64>,
}

/// Which ledger a limit belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole run.
    Run,
    /// One workstream, by id.
    Workstream(String),
    /// One brief, by id.
    Brief(String),
}

/// The scope a `budget_exhausted` record names by `kind` (`run`, `workstream`, `brief`) and `id`; an
/// unknown kind is the run's (the widest: raising it never lets a narrower limit be passed unseen).
pub fn scope_of(kind: Option<&str>, id: Option<&str>) -> Scope {
    match kind {
        Some("workstream") => Scope::Workstream(id.unwrap_or_default().to_string()),
        Some("brief") => Scope::Brief(id.unwrap_or_default().to_string()),
        _ => Scope::Run,
    }
}

/// The scope a `budget_raised` record names as text (`run`, `workstream <id>`, `brief <id>`).
pub fn scope_named(name: &str) -> Scope {
    match name.split_once(' ') {
        Some(("workstream", id)) => Scope::Workstream(id.to_string()),
        Some(("brief", id)) => Scope::Brief(id.to_string()),
        _ => Scope::Run,
    }
}

/// A `tokens=N` or `usd=X` note read into a limit; `None` for any other note.
pub fn limit_from_note(note: &str) -> Option<Limit> {
    let (key, value) = note.trim().split_once('=')?;
    match key.trim() {
        "tokens" => value.trim().parse().ok().map(|t| Limit {
            tokens: Some(t),
            usd: None,
        }),
        "usd" => value.trim().parse().ok().map(|u| Limit {
            tokens: None,
            usd: Some(u),
        }),
        _ => None,
    }
}

/// The limit an approved budget gate sets, from the `current` one: what the human's `note` names, else
/// the current limit doubled (saturating).
pub fn raised(note: Option<&str>, current: Limit) -> Limit {
    note.and_then(limit_from_note).unwrap_or(Limit {
        tokens: current.tokens.map(|t| t.saturating_mul(2)),
        usd: current.usd.map(|u| u * 2.0),
    })
}

/// What a budget gate in `status` does, when a `budget_raised` record already acted on it or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetGateStep {
    /// Pending, or acted on already: nothing.
    Nothing,
    /// Rejected: the run stops (cancelled).
    StopRun,
    /// Approved: the limit is raised ([`raised`]) and a `budget_raised` record says so.
    Raise,
}

/// What a budget gate in `status`, `handled` already or not, does.
pub fn after_budget_gate(status: GateStatus, handled: bool) -> BudgetGateStep {
    match status {
        GateStatus::Pending => BudgetGateStep::Nothing,
        _ if handled => BudgetGateStep::Nothing,
        GateStatus::Rejected => BudgetGateStep::StopRun,
        GateStatus::Approved => BudgetGateStep::Raise,
    }
}

/// Whether a refusal opens the `budget` gate, given whether one is pending (`None`: the blackboard could
/// not say). One gate at a time: a second refusal while it waits, or one the blackboard cannot check,
/// opens none (the refusal itself is recorded either way).
pub fn refusal_opens_gate(budget_gate_pending: Option<bool>) -> bool {
    budget_gate_pending == Some(false)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn notes_name_new_limits() {
        assert_eq!(
            limit_from_note("tokens=500"),
            Some(Limit {
                tokens: Some(500),
                usd: None
            })
        );
        assert_eq!(
            limit_from_note(" usd = 2.5 "),
            Some(Limit {
                tokens: None,
                usd: Some(2.5)
            })
        );
        assert_eq!(limit_from_note("more please"), None);
        assert_eq!(limit_from_note("tokens=lots"), None);
        assert_eq!(limit_from_note("tokens=-5"), None, "no negative token limit");
        assert_eq!(limit_from_note("cents=5"), None);
        assert_eq!(limit_from_note(""), None);
    }

    #[test]
    fn an_approval_doubles_the_limit_unless_the_note_names_one() {
        let current = Limit {
            tokens: Some(1_000),
            usd: Some(1.5),
        };
        assert_eq!(
            raised(None, current),
            Limit {
                tokens: Some(2_000),
                usd: Some(3.0)
            }
        );
        assert_eq!(raised(Some("looks fine"), current), raised(None, current));
        assert_eq!(
            raised(Some("usd=10"), current),
            Limit {
                tokens: None,
                usd: Some(10.0)
            }
        );
        assert_eq!(
            raised(
                None,
                Limit {
                    tokens: Some(u64::MAX),
                    usd: None
                }
            )
            .tokens,
            Some(u64::MAX),
            "never wraps"
        );
        assert_eq!(
            raised(None, Limit::default()),
            Limit::default(),
            "no limit stays none"
        );
    }

    #[test]
    fn scopes_read_from_both_records() {
        assert_eq!(
            scope_of(Some("workstream"), Some("api")),
            Scope::Workstream("api".into())
        );
        assert_eq!(scope_of(Some("brief"), Some("b1")), Scope::Brief("b1".into()));
        assert_eq!(scope_of(Some("run"), None), Scope::Run);
        assert_eq!(scope_of(Some("galaxy"), Some("x")), Scope::Run);
        assert_eq!(scope_of(None, None), Scope::Run);
        assert_eq!(scope_named("workstream api"), Scope::Workstream("api".into()));
        assert_eq!(scope_named("brief b1"), Scope::Brief("b1".into()));
        assert_eq!(scope_named("run"), Scope::Run);
    }

    proptest! {
        /// Without a note naming one, an approval never lowers a limit nor removes one, nor adds one.
        #[test]
        fn a_raise_never_lowers_a_limit(
            tokens in prop::option::of(any::<u64>()),
            usd in prop::option::of(0.0f64..1e12),
            note in "[a-z =0-9.]{0,12}",
        ) {
            let current = Limit { tokens, usd };
            let got = raised(Some(&note), current);
            if limit_from_note(&note).is_none() {
                prop_assert_eq!(got.tokens.is_some(), tokens.is_some());
                prop_assert_eq!(got.usd.is_some(), usd.is_some());
                prop_assert!(got.tokens >= tokens);
                prop_assert!(got.usd >= usd);
            } else {
                prop_assert_eq!(Some(got), limit_from_note(&note));
            }
        }
    }
}
