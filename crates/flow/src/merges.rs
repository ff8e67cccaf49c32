//! Handing a slice over and merging a squad's slices, decided: whether an implementer that reported done
//! changed anything, whether a squad's round is judged and not yet acted on, the order slices merge in
//! (grouped by the branch they go into, in the squad's order), which merges are announced, and what a
//! merge conflict sends where (the slice back to its implementer, on top of what is merged, while its
//! retry budget lasts; then up the ladder). The engine's merge executor (`crates/engine/src/handover.rs`)
//! commits, verifies and merges with git, and asks these.

use agency_core::BriefStatus;
use agency_core::escalation::{Decision, Failure, decide};

/// Whether an implementer that reported done left work to sign off: something was committed for it now,
/// or its branch's commit (`rev`) differs from its base's (`base_rev`: the agent committed itself).
/// Neither: it changed nothing, and fails.
pub fn changed_something(committed: bool, rev: &str, base_rev: &str) -> bool {
    committed || rev != base_rev
}

/// Where a squad's round stands, from the statuses of its current tasks' newest verifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SquadRound {
    /// A task has no verifier yet, or a verifier is still working: no joint verdict yet.
    NotJudged,
    /// Every verifier is `done`: this round's verdict was acted on already.
    ActedOn,
    /// Every task's verifier has reported (`verifying`, some possibly `done` from an earlier round in
    /// which their slice passed): the joint verdict is formed now.
    Judge,
}

/// Where a squad of `tasks` current tasks stands, given the status of each task's newest verifier in the
/// tasks' order, as far as they were found (a task without one ends the list).
pub fn squad_round(tasks: usize, verifiers: &[BriefStatus]) -> SquadRound {
    if verifiers.len() != tasks
        || verifiers
            .iter()
            .any(|status| !matches!(status, BriefStatus::Verifying | BriefStatus::Done))
    {
        return SquadRound::NotJudged;
    }
    if verifiers.iter().all(|status| *status == BriefStatus::Done) {
        return SquadRound::ActedOn;
    }
    SquadRound::Judge
}

/// The order a squad's slices merge in: grouped by the branch each goes `into` (in the order the branches
/// first appear), each group's slices in the squad's order. A group is merged together, with one merge
/// commit, where git can; otherwise one slice at a time in this order.
pub fn merge_order<'a>(into: &[&'a str]) -> Vec<(&'a str, Vec<usize>)> {
    let mut groups: Vec<(&'a str, Vec<usize>)> = Vec::new();
    for (slice, &branch) in into.iter().enumerate() {
        match groups.iter_mut().find(|(target, _)| *target == branch) {
            Some((_, group)) => group.push(slice),
            None => groups.push((branch, vec![slice])),
        }
    }
    groups
}

/// Whether a slice's merge is announced (a `MERGED` line): always when it merged something now; a slice
/// found already up to date only when it was judged in this round (one merged in an earlier round of its
/// squad, while a sibling conflicted, is not announced twice).
pub fn announce_merge(already_up_to_date: bool, judged_now: bool) -> bool {
    !already_up_to_date || judged_now
}

/// What a slice whose merge conflicts leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeConflict {
    /// The reason its implementer is given (and the `CONFLICT` line says).
    pub why: String,
    /// The failure it counts as: the implementer's output does not fit the workstream as it now is.
    pub failure: Failure,
}

impl MergeConflict {
    /// What it does to the slice's brief, now at `attempt` with `retry_budget`: retry on top of what is
    /// merged while the budget lasts, else escalate.
    pub fn decision(&self, attempt: u32, retry_budget: u32) -> Decision {
        decide(self.failure, attempt, retry_budget)
    }
}

/// What a conflict merging a slice into `into`, in `files`, leads to. A conflict is never resolved by the
/// runner: the slice is redone on top of the current workstream.
pub fn merge_conflict(into: &str, files: &[String]) -> MergeConflict {
    MergeConflict {
        why: format!(
            "merging into {into} conflicts in {}; redo the change on top of the current workstream",
            files.join(", ")
        ),
        failure: Failure::T4BadOutput,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agency_core::Tier;
    use agency_core::escalation::EscalationTarget;
    use proptest::prelude::*;

    #[test]
    fn an_implementer_changed_something_if_it_committed_or_moved_its_branch() {
        assert!(changed_something(true, "a", "a"));
        assert!(changed_something(false, "b", "a"));
        assert!(changed_something(true, "b", "a"));
        assert!(!changed_something(false, "a", "a"));
    }

    #[test]
    fn a_round_is_judged_once_every_verifier_reported_and_one_is_new() {
        use BriefStatus::*;
        assert_eq!(squad_round(2, &[Verifying, Verifying]), SquadRound::Judge);
        // A slice that passed in an earlier round keeps its done verifier.
        assert_eq!(squad_round(2, &[Done, Verifying]), SquadRound::Judge);
        assert_eq!(squad_round(2, &[Done, Done]), SquadRound::ActedOn);
        // A task without a verifier yet, or one still at work.
        assert_eq!(squad_round(2, &[Verifying]), SquadRound::NotJudged);
        assert_eq!(squad_round(2, &[Verifying, Running]), SquadRound::NotJudged);
        assert_eq!(squad_round(2, &[Pending, Done]), SquadRound::NotJudged);
        assert_eq!(squad_round(1, &[Failed]), SquadRound::NotJudged);
        assert_eq!(squad_round(1, &[Cancelled]), SquadRound::NotJudged);
    }

    #[test]
    fn slices_merge_grouped_by_branch_in_the_squads_order() {
        assert_eq!(
            merge_order(&["ws-a", "ws-b", "ws-a", "ws-a", "ws-b"]),
            vec![("ws-a", vec![0, 2, 3]), ("ws-b", vec![1, 4])]
        );
        assert_eq!(merge_order(&["one"]), vec![("one", vec![0])]);
        assert!(merge_order(&[]).is_empty());
    }

    #[test]
    fn a_merge_already_up_to_date_is_announced_only_in_its_own_round() {
        assert!(announce_merge(false, true));
        assert!(announce_merge(false, false));
        assert!(announce_merge(true, true));
        assert!(!announce_merge(true, false));
    }

    #[test]
    fn a_conflict_sends_the_slice_back_then_up() {
        let files = vec!["src/a.rs".to_string(), "README.md".to_string()];
        let conflict = merge_conflict("agency/ws-a", &files);
        assert_eq!(
            conflict.why,
            "merging into agency/ws-a conflicts in src/a.rs, README.md; redo the change on top of the \
             current workstream"
        );
        assert_eq!(conflict.failure, Failure::T4BadOutput);
        assert_eq!(conflict.decision(0, 2), Decision::Retry { next_attempt: 1 });
        assert_eq!(
            conflict.decision(2, 2),
            Decision::Escalate {
                to: EscalationTarget::Tier(Tier::T2)
            }
        );
    }

    proptest! {
        /// Every slice is merged exactly once, into its own branch, after the slices before it that go
        /// to the same branch.
        #[test]
        fn every_slice_merges_once_into_its_branch(into in proptest::collection::vec("[abc]", 0..24)) {
            let into: Vec<&str> = into.iter().map(String::as_str).collect();
            let groups = merge_order(&into);
            let mut seen = vec![0usize; into.len()];
            for (branch, group) in &groups {
                prop_assert!(group.windows(2).all(|w| w[0] < w[1]));
                for &slice in group {
                    prop_assert_eq!(into[slice], *branch);
                    seen[slice] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&n| n == 1));
            // One group per branch.
            let mut branches: Vec<&str> = groups.iter().map(|(b, _)| *b).collect();
            branches.dedup();
            prop_assert_eq!(branches.len(), groups.len());
        }

        /// A conflict retries while the budget lasts and escalates after; never anything else.
        #[test]
        fn a_conflict_retries_within_the_budget(attempt in 0u32..10, budget in 0u32..10) {
            let conflict = merge_conflict("b", &["f".to_string()]);
            match conflict.decision(attempt, budget) {
                Decision::Retry { next_attempt } => {
                    prop_assert!(attempt < budget);
                    prop_assert_eq!(next_attempt, attempt + 1);
                }
                Decision::Escalate { .. } => prop_assert!(attempt >= budget),
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
    }
}
