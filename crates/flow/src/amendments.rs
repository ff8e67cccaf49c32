//! Path amendments (seed 001, "Dynamic Paths"): what a workstream's tier path becomes when a proposed
//! change is approved, and which proposals still wait for a human. A workstream's path is the plan's
//! `tier_path` with every approved amendment applied in the order they were proposed.
//!
//! An amendment changes only the *remaining* path: the tiers after the proposer's own position. The tiers
//! already passed stay as they are, and verification stays last — `t5` always runs.

use std::collections::HashSet;

use agency_core::Tier;
use agency_core::event::payload::PathChange;

/// Why a proposed change cannot apply to a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmendmentError {
    /// Neither `add_tiers` nor `shallower_path` says what to change.
    #[error(
        "the amendment changes nothing: give add_tiers with insert_before, or shallower_path with its reason"
    )]
    Empty,
    /// Both kinds of change at once.
    #[error("give either add_tiers (with insert_before) or shallower_path, not both")]
    Both,
    /// `add_tiers` without the tier they go before.
    #[error("add_tiers needs insert_before: the tier of the remaining path the added tiers go before")]
    NoInsertPoint,
    /// `insert_before` names a tier that is not on the remaining path.
    #[error("insert_before {tier} is not on the workstream's remaining path {remaining}")]
    NotRemaining {
        /// The tier named.
        tier: Tier,
        /// The remaining path, `t4→t5`.
        remaining: String,
    },
    /// Only T2..T4 passes may be added: T1 plans and accepts the whole run, T5 already ends every path.
    #[error("add_tiers may hold t2, t3 or t4 only, found {0}")]
    NotAddable(Tier),
    /// A shallower path without its reason.
    #[error("shallower_path needs shallower_path_reason: why fewer tiers are enough")]
    NoReason,
    /// A "shallower" path that is not shorter than the current one.
    #[error("shallower_path {proposed} is not shallower than the current path {current}")]
    NotShallower {
        /// The path proposed.
        proposed: String,
        /// The current path.
        current: String,
    },
    /// A path that does not end in `t5`.
    #[error("the path must end in t5 (verification always runs), found {0}")]
    NoVerification(String),
    /// A shallower path that drops or reorders tiers the workstream already passed.
    #[error("shallower_path {proposed} does not keep the tiers already passed ({passed})")]
    RewritesThePast {
        /// The path proposed.
        proposed: String,
        /// The tiers already passed.
        passed: String,
    },
}

/// A path in words: `t3→t4→t5`.
pub fn path_text(path: &[Tier]) -> String {
    path.iter().map(|t| t.as_str()).collect::<Vec<_>>().join("→")
}

/// How many tiers of `path` the workstream has passed when a tier at `at` proposes a change: everything up
/// to and including `at`'s first place on the path (a tier not on the path, or none, has passed nothing).
fn passed(path: &[Tier], at: Option<Tier>) -> usize {
    at.and_then(|at| path.iter().position(|t| *t == at))
        .map_or(0, |i| i + 1)
}

/// The path `change` makes of `path`, proposed by a brief of tier `at` (`None`: by a human, or from
/// outside the workstream — the whole path is still to come).
///
/// - `add_tiers` + `insert_before`: the tiers go just before the first `insert_before` still to come
///   (`t3→t4→t5` + add `t3` before `t5` from a T4 = `t3→t4→t3→t5`);
/// - `shallower_path`: the path becomes it, if it is shorter, keeps the passed tiers as its start and has a
///   reason.
///
/// Either way the result ends in `t5`.
pub fn amended_path(
    path: &[Tier],
    at: Option<Tier>,
    change: &PathChange,
) -> Result<Vec<Tier>, AmendmentError> {
    let done = passed(path, at);
    let amended = match (&change.shallower_path, change.add_tiers.is_empty()) {
        (None, true) => return Err(AmendmentError::Empty),
        (Some(_), false) => return Err(AmendmentError::Both),
        (None, false) => {
            if let Some(bad) = change
                .add_tiers
                .iter()
                .find(|t| !matches!(t, Tier::T2 | Tier::T3 | Tier::T4))
            {
                return Err(AmendmentError::NotAddable(*bad));
            }
            let before = change.insert_before.ok_or(AmendmentError::NoInsertPoint)?;
            let offset = path[done..].iter().position(|t| *t == before).ok_or_else(|| {
                AmendmentError::NotRemaining {
                    tier: before,
                    remaining: path_text(&path[done..]),
                }
            })?;
            let mut amended = path.to_vec();
            let at = done + offset;
            amended.splice(at..at, change.add_tiers.iter().copied());
            amended
        }
        (Some(shallower), true) => {
            if change
                .shallower_path_reason
                .as_deref()
                .is_none_or(|r| r.trim().is_empty())
            {
                return Err(AmendmentError::NoReason);
            }
            if shallower.len() >= path.len() {
                return Err(AmendmentError::NotShallower {
                    proposed: path_text(shallower),
                    current: path_text(path),
                });
            }
            if !shallower.starts_with(&path[..done]) {
                return Err(AmendmentError::RewritesThePast {
                    proposed: path_text(shallower),
                    passed: path_text(&path[..done]),
                });
            }
            shallower.clone()
        }
    };
    if amended.last() != Some(&Tier::T5) {
        return Err(AmendmentError::NoVerification(path_text(&amended)));
    }
    Ok(amended)
}

/// A proposal as the runner reads it back: its `seq`, the proposer's tier and the change.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The `path_amendment` event's seq: the amendment's name.
    pub seq: i64,
    /// The proposer's tier (`None`: a human).
    pub at: Option<Tier>,
    /// What it changes.
    pub change: PathChange,
}

/// `workstream`'s path today: the plan's path with each approved proposal applied in the order proposed.
/// One that no longer applies (an earlier approval moved its insert point away) is skipped, and returned
/// with the reason, so the reader can say so instead of changing the path in a way nobody approved.
pub fn current_path<'p>(
    planned: &[Tier],
    approved: impl IntoIterator<Item = &'p Proposal>,
) -> (Vec<Tier>, Vec<(i64, AmendmentError)>) {
    let mut path = planned.to_vec();
    let mut skipped = Vec::new();
    for proposal in approved {
        match amended_path(&path, proposal.at, &proposal.change) {
            Ok(next) => path = next,
            Err(err) => skipped.push((proposal.seq, err)),
        }
    }
    (path, skipped)
}

/// The proposals no human has decided yet, in the order proposed.
pub fn undecided<'p>(proposals: &'p [Proposal], decided: &HashSet<i64>) -> Vec<&'p Proposal> {
    proposals.iter().filter(|p| !decided.contains(&p.seq)).collect()
}

/// How many passes of `tier` the path asks for.
pub fn passes_of(path: &[Tier], tier: Tier) -> usize {
    path.iter().filter(|t| **t == tier).count()
}

/// Why the runner of this build cannot carry out `change` once approved, if it cannot. It carries out one
/// kind: an extra squad-lead pass before verification (`add_tiers: [t3]` or `[t3, t4]`, `insert_before:
/// t5`) — a new T3 brief for the workstream, written before the workstream merges, whose tasks are
/// implemented and verified like the first pass's. Any other change (a T2 pass, a shallower path) is
/// refused at approval rather than recorded as approved and never done.
pub fn not_carried_out(change: &PathChange) -> Option<String> {
    let extra_squad_pass = change.shallower_path.is_none()
        && change.insert_before == Some(Tier::T5)
        && matches!(change.add_tiers.as_slice(), [Tier::T3] | [Tier::T3, Tier::T4]);
    (!extra_squad_pass).then(|| {
        format!(
            "this runner carries out only an extra squad-lead pass (add_tiers [t3] or [t3, t4] before t5); \
             \"{}\" would be recorded as approved and never done — reject it, or re-plan the workstream",
            change.describe()
        )
    })
}

/// The title of the `n`th (from 1) extra squad-lead pass of a workstream.
pub fn extra_pass_title(n: usize) -> String {
    format!("amended-pass-{n}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use Tier::*;

    fn add(tiers: &[Tier], before: Tier) -> PathChange {
        PathChange {
            workstream: "ws".into(),
            add_tiers: tiers.to_vec(),
            insert_before: Some(before),
            ..PathChange::default()
        }
    }

    fn shallower(path: &[Tier], reason: &str) -> PathChange {
        PathChange {
            workstream: "ws".into(),
            shallower_path: Some(path.to_vec()),
            shallower_path_reason: Some(reason.into()),
            ..PathChange::default()
        }
    }

    #[test]
    fn a_t4_adds_an_extra_squad_pass_before_verification() {
        let path = amended_path(&[T3, T4, T5], Some(T4), &add(&[T3], T5)).unwrap();
        assert_eq!(path, vec![T3, T4, T3, T5]);
        assert_eq!(passes_of(&path, T3), 2);
    }

    #[test]
    fn the_seeds_example_adds_a_t2_pass_before_t3() {
        let path = amended_path(&[T3, T4, T5], None, &add(&[T2], T3)).unwrap();
        assert_eq!(path, vec![T2, T3, T4, T5]);
    }

    #[test]
    fn the_insert_point_must_still_be_to_come() {
        // A T4 cannot put a T2 pass before the T3 that already ran.
        let err = amended_path(&[T3, T4, T5], Some(T4), &add(&[T2], T3)).unwrap_err();
        assert_eq!(
            err,
            AmendmentError::NotRemaining {
                tier: T3,
                remaining: "t5".into()
            }
        );
        assert!(err.to_string().contains("remaining path t5"), "{err}");
    }

    #[test]
    fn changes_that_say_nothing_or_too_much_are_refused() {
        let empty = PathChange {
            workstream: "ws".into(),
            ..PathChange::default()
        };
        assert_eq!(amended_path(&[T4, T5], None, &empty), Err(AmendmentError::Empty));
        let mut both = add(&[T3], T5);
        both.shallower_path = Some(vec![T5]);
        assert_eq!(amended_path(&[T4, T5], None, &both), Err(AmendmentError::Both));
        let mut no_point = add(&[T3], T5);
        no_point.insert_before = None;
        assert_eq!(
            amended_path(&[T4, T5], None, &no_point),
            Err(AmendmentError::NoInsertPoint)
        );
        assert_eq!(
            amended_path(&[T4, T5], None, &add(&[T1], T4)),
            Err(AmendmentError::NotAddable(T1))
        );
        assert_eq!(
            amended_path(&[T4, T5], None, &add(&[T5], T5)),
            Err(AmendmentError::NotAddable(T5))
        );
    }

    #[test]
    fn a_shallower_path_needs_a_reason_and_must_be_shallower() {
        let full = [T2, T3, T4, T5];
        assert_eq!(
            amended_path(&full, Some(T2), &shallower(&[T2, T4, T5], "one file")).unwrap(),
            vec![T2, T4, T5]
        );
        assert_eq!(
            amended_path(&full, None, &shallower(&[T4, T5], " ")),
            Err(AmendmentError::NoReason)
        );
        assert!(matches!(
            amended_path(&[T4, T5], None, &shallower(&[T3, T5], "why")),
            Err(AmendmentError::NotShallower { .. })
        ));
        assert!(matches!(
            amended_path(&full, Some(T3), &shallower(&[T2, T4, T5], "skip the squad")),
            Err(AmendmentError::RewritesThePast { .. })
        ));
        assert_eq!(
            amended_path(&full, None, &shallower(&[T4], "no checks")),
            Err(AmendmentError::NoVerification("t4".into()))
        );
    }

    #[test]
    fn approved_proposals_apply_in_order_and_a_stale_one_is_skipped_with_its_reason() {
        let first = Proposal {
            seq: 10,
            at: Some(T4),
            change: add(&[T3], T5),
        };
        // Proposed against the original path by a T3: "before t4" is still to come for it.
        let second = Proposal {
            seq: 12,
            at: Some(T3),
            change: add(&[T2], T4),
        };
        let stale = Proposal {
            seq: 14,
            at: Some(T5),
            change: add(&[T4], T5),
        };
        let (path, skipped) = current_path(&[T3, T4, T5], [&first, &second, &stale]);
        assert_eq!(path, vec![T3, T2, T4, T3, T5]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].0, 14);
    }

    #[test]
    fn only_an_extra_squad_pass_is_carried_out() {
        assert_eq!(not_carried_out(&add(&[T3], T5)), None);
        assert_eq!(not_carried_out(&add(&[T3, T4], T5)), None);
        let t2 = not_carried_out(&add(&[T2], T3)).unwrap();
        assert!(t2.contains("add t2 before t3"), "{t2}");
        assert!(not_carried_out(&add(&[T3], T4)).is_some());
        assert!(not_carried_out(&shallower(&[T4, T5], "small")).is_some());
    }

    #[test]
    fn undecided_keeps_the_order_proposed() {
        let proposals: Vec<Proposal> = [3, 5, 8]
            .into_iter()
            .map(|seq| Proposal {
                seq,
                at: None,
                change: add(&[T3], T5),
            })
            .collect();
        let decided = HashSet::from([5]);
        let left: Vec<i64> = undecided(&proposals, &decided).iter().map(|p| p.seq).collect();
        assert_eq!(left, vec![3, 8]);
    }

    proptest::proptest! {
        /// Whatever is proposed, an accepted change keeps the passed tiers and ends in verification.
        #[test]
        fn an_accepted_change_keeps_the_past_and_ends_in_t5(
            path in proptest::collection::vec(0usize..5, 0..5),
            at in proptest::option::of(0usize..5),
            added in proptest::collection::vec(0usize..5, 0..3),
            before in 0usize..5,
            shallow in proptest::option::of(proptest::collection::vec(0usize..5, 0..4)),
        ) {
            let tier = |i: usize| Tier::ALL[i];
            let mut path: Vec<Tier> = path.into_iter().map(tier).collect();
            path.push(T5);
            let at = at.map(tier);
            let change = PathChange {
                workstream: "ws".into(),
                add_tiers: added.into_iter().map(tier).collect(),
                insert_before: Some(tier(before)),
                shallower_path: shallow.map(|s| s.into_iter().map(tier).collect()),
                shallower_path_reason: Some("why".into()),
            };
            if let Ok(amended) = amended_path(&path, at, &change) {
                let done = passed(&path, at);
                proptest::prop_assert!(amended.starts_with(&path[..done]));
                proptest::prop_assert_eq!(amended.last(), Some(&T5));
            }
        }
    }
}
