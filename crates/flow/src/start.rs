//! Where an agent starts, decided before anything is made for it: how many briefs a runner claims, what
//! a writer's branch starts from (its pipeline predecessors' work, its previous attempt's salvaged work,
//! or its workstream branch), what a reader checks out, and when a worktree made ahead while a gate
//! waits (a spare) is made, used or given up. The engine's spawn executor (`crates/engine/src/spawn.rs`)
//! reads what these need from the blackboard and git, and carries the answers out.

use agency_core::BriefId;
use agency_core::gate::GateKind;
use agency_core::tiers::BriefRole;

/// How many agents a runner runs at once: team.yaml's `runner.concurrency`, at least one (a `0` in the
/// file would otherwise stop the run without a word).
pub fn concurrency(configured: u32) -> usize {
    usize::try_from(configured.max(1)).unwrap_or(1)
}

/// How many more briefs a runner with `in_flight` agents claims now.
pub fn room(concurrency: usize, in_flight: usize) -> usize {
    concurrency.saturating_sub(in_flight)
}

/// What a writer's branch starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterBase<'a> {
    /// Its pipeline predecessors' work, not in the workstream branch yet (slices merge only after their
    /// squad's joint verdict): made at the first predecessor's branch, `merge_in` merged into it.
    Pipeline { first: &'a str, merge_in: &'a [String] },
    /// Its previous attempt's branch, which holds the work that attempt committed before it reported
    /// `partial`.
    Salvaged(&'a str),
    /// Its workstream branch: a first attempt, or a retry of one that failed any other way.
    Workstream(&'a str),
}

impl WriterBase<'_> {
    /// The branch the writer's own branch is made at.
    pub fn branch(&self) -> &str {
        match self {
            WriterBase::Pipeline { first, .. } => first,
            WriterBase::Salvaged(branch) | WriterBase::Workstream(branch) => branch,
        }
    }
}

/// What a writer starts from, given the branches of its pipeline predecessors that have one (in the
/// brief's `depends_on` order), its previous attempt's branch if that is salvaged ([`salvages`]), and its
/// workstream branch. Predecessors come first: a pipeline task builds on their work whatever its own
/// previous attempt did, and their diffs are among its inputs.
pub fn writer_base<'a>(
    predecessors: &'a [String],
    salvaged: Option<&'a str>,
    workstream: &'a str,
) -> WriterBase<'a> {
    match predecessors.split_first() {
        Some((first, merge_in)) => WriterBase::Pipeline { first, merge_in },
        None => match salvaged {
            Some(branch) => WriterBase::Salvaged(branch),
            None => WriterBase::Workstream(workstream),
        },
    }
}

/// The attempt whose work a retry may start from: the one before it, for a brief with a parent (a
/// squad's task). `None` for a first attempt or a brief without a parent.
pub fn previous_attempt(attempt: u32, parent: Option<BriefId>) -> Option<(BriefId, u32)> {
    Some((parent?, attempt.checked_sub(1)?))
}

/// How a previous attempt's report read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviousReport {
    /// It said `partial`: it committed work a retry can build on.
    Partial,
    /// It said anything else (`done`, `blocked`, `failed`).
    Other,
    /// There is none, or it does not read as a report.
    Unread,
}

/// Whether a retry starts from its previous attempt's branch: only when that attempt reported `partial`
/// and its branch (`previous_branch`: recorded on the brief, and still in the repository) is there. A
/// report that does not read is not taken for a partial one: the retry then starts from the workstream
/// branch, as a failed attempt's does (the safe side: nothing of an unread attempt is built on).
pub fn salvages(report: PreviousReport, previous_branch: bool) -> bool {
    report == PreviousReport::Partial && previous_branch
}

/// What a reader's detached checkout shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderSees {
    /// The branch of the brief that made the work it judges (a verifier's implementer), or the
    /// integration branch when that brief has none recorded.
    ParentBranch(BriefId),
    /// The run's integration branch.
    Integration,
}

/// What a reader of `role` with `parent` checks out: a verifier its implementer's branch, every other
/// reader the integration branch.
pub fn reader_sees(role: BriefRole, parent: Option<BriefId>) -> ReaderSees {
    match (role, parent) {
        (BriefRole::Verifier, Some(parent)) => ReaderSees::ParentBranch(parent),
        _ => ReaderSees::Integration,
    }
}

/// The most worktrees made ahead while a gate waits: the agents that start together after an approval
/// are usually a few (a plan's first parallel group, a squad's tasks); more would cost a checkout each on
/// every wait.
pub const MOST_SPARES: usize = 4;

/// Whether approving a pending gate of `kind` writes briefs that start next (the plan's, a lead's, a squad
/// lead's), so worktrees made ahead while it waits are used.
pub fn gate_expands(kind: GateKind) -> bool {
    matches!(kind, GateKind::T1Plan | GateKind::T2Lead | GateKind::T3Plan)
}

/// What a runner does with spare worktrees on a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpareStep {
    /// A gate that expands waits: keep `wanted` spares at the integration branch's head (none when no
    /// agent could start after it).
    Make { wanted: usize },
    /// No such gate waits and no agent started this turn: every spare left goes to the sweep.
    Discard,
    /// No such gate waits, but agents started this turn: removing the rest now would hold up their start
    /// (the sweep runs before they do), so that waits for the next turn.
    Keep,
}

/// What to do with spares, given whether a gate that expands is pending (see [`gate_expands`]), how many
/// agents could start (`room`) and whether this turn started any.
pub fn spare_step(expanding: bool, room: usize, spawned: bool) -> SpareStep {
    if expanding {
        SpareStep::Make {
            wanted: room.min(MOST_SPARES),
        }
    } else if spawned {
        SpareStep::Keep
    } else {
        SpareStep::Discard
    }
}

/// Which spare a brief starting at `commit` is given: the first made at that commit. `None` when the
/// brief's worktree is already there (a resumed brief keeps its own) or no spare is at that commit.
pub fn spare_for<'a>(
    spares: impl IntoIterator<Item = &'a str>,
    commit: &str,
    worktree_exists: bool,
) -> Option<usize> {
    if worktree_exists {
        return None;
    }
    spares.into_iter().position(|at| at == commit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn concurrency_is_at_least_one_and_room_never_negative() {
        assert_eq!(concurrency(0), 1);
        assert_eq!(concurrency(1), 1);
        assert_eq!(concurrency(12), 12);
        assert_eq!(room(4, 0), 4);
        assert_eq!(room(4, 3), 1);
        assert_eq!(room(4, 4), 0);
        // A lowered limit with more agents in flight than it allows claims nothing.
        assert_eq!(room(2, 5), 0);
    }

    #[test]
    fn predecessors_come_before_a_salvaged_attempt() {
        let before = vec!["b1".to_string(), "b2".to_string(), "b3".to_string()];
        let base = writer_base(&before, Some("previous"), "ws");
        assert_eq!(
            base,
            WriterBase::Pipeline {
                first: "b1",
                merge_in: &before[1..]
            }
        );
        assert_eq!(base.branch(), "b1");
        let one = vec!["only".to_string()];
        assert_eq!(
            writer_base(&one, None, "ws"),
            WriterBase::Pipeline {
                first: "only",
                merge_in: &[]
            }
        );
    }

    #[test]
    fn a_salvaged_attempt_comes_before_the_workstream() {
        assert_eq!(
            writer_base(&[], Some("previous"), "ws"),
            WriterBase::Salvaged("previous")
        );
        assert_eq!(writer_base(&[], Some("previous"), "ws").branch(), "previous");
        assert_eq!(writer_base(&[], None, "ws"), WriterBase::Workstream("ws"));
        assert_eq!(writer_base(&[], None, "ws").branch(), "ws");
    }

    #[test]
    fn only_a_partial_report_with_its_branch_is_salvaged() {
        assert!(salvages(PreviousReport::Partial, true));
        assert!(!salvages(PreviousReport::Partial, false));
        assert!(!salvages(PreviousReport::Other, true));
        assert!(!salvages(PreviousReport::Unread, true));
        assert!(!salvages(PreviousReport::Unread, false));
    }

    #[test]
    fn a_first_attempt_or_an_orphan_has_no_previous_attempt() {
        let parent = BriefId::new();
        assert_eq!(previous_attempt(0, Some(parent)), None);
        assert_eq!(previous_attempt(3, None), None);
        assert_eq!(previous_attempt(1, Some(parent)), Some((parent, 0)));
        assert_eq!(
            previous_attempt(u32::MAX, Some(parent)),
            Some((parent, u32::MAX - 1))
        );
    }

    #[test]
    fn only_a_verifier_with_a_parent_sees_another_branch() {
        let parent = BriefId::new();
        assert_eq!(
            reader_sees(BriefRole::Verifier, Some(parent)),
            ReaderSees::ParentBranch(parent)
        );
        assert_eq!(reader_sees(BriefRole::Verifier, None), ReaderSees::Integration);
        for role in [
            BriefRole::Plan,
            BriefRole::Accept,
            BriefRole::Arbiter,
            BriefRole::Validator,
            BriefRole::Lead,
            BriefRole::Specialist,
            BriefRole::Synthesis,
            BriefRole::SquadLead,
            BriefRole::Implementer,
        ] {
            assert_eq!(
                reader_sees(role, Some(parent)),
                ReaderSees::Integration,
                "{role:?}"
            );
        }
    }

    #[test]
    fn only_expansion_gates_make_spares() {
        for kind in [GateKind::T1Plan, GateKind::T2Lead, GateKind::T3Plan] {
            assert!(gate_expands(kind), "{kind:?}");
        }
        for kind in [
            GateKind::T2Synthesis,
            GateKind::Teachback,
            GateKind::T5Verdict,
            GateKind::Pause,
            GateKind::Halt,
            GateKind::Escalation,
            GateKind::Budget,
        ] {
            assert!(!gate_expands(kind), "{kind:?}");
        }
    }

    #[test]
    fn spares_are_kept_through_a_turn_that_started_agents() {
        assert_eq!(spare_step(true, 2, false), SpareStep::Make { wanted: 2 });
        assert_eq!(spare_step(true, 0, true), SpareStep::Make { wanted: 0 });
        assert_eq!(
            spare_step(true, 100, false),
            SpareStep::Make { wanted: MOST_SPARES }
        );
        assert_eq!(spare_step(false, 3, true), SpareStep::Keep);
        assert_eq!(spare_step(false, 3, false), SpareStep::Discard);
    }

    #[test]
    fn a_spare_is_given_only_at_its_commit_and_never_over_a_worktree() {
        let spares = ["c1", "c2", "c2"];
        assert_eq!(spare_for(spares, "c2", false), Some(1));
        assert_eq!(spare_for(spares, "c1", false), Some(0));
        assert_eq!(spare_for(spares, "c3", false), None);
        assert_eq!(spare_for(spares, "c2", true), None);
        assert_eq!(spare_for([], "c1", false), None);
    }

    proptest! {
        /// Whatever the inputs, the base is a predecessor's branch when there is one, the salvaged
        /// branch only without predecessors, and the workstream only without either; every
        /// predecessor is either the base or merged in, once.
        #[test]
        fn every_predecessor_is_in_the_writers_start(
            before in proptest::collection::vec("[a-z]{1,4}", 0..6),
            salvaged in proptest::option::of("[a-z]{1,4}"),
        ) {
            let base = writer_base(&before, salvaged.as_deref(), "ws");
            match base {
                WriterBase::Pipeline { first, merge_in } => {
                    prop_assert!(!before.is_empty());
                    let mut all = vec![first.to_string()];
                    all.extend(merge_in.iter().cloned());
                    prop_assert_eq!(all, before.clone());
                }
                WriterBase::Salvaged(branch) => {
                    prop_assert!(before.is_empty());
                    prop_assert_eq!(Some(branch), salvaged.as_deref());
                }
                WriterBase::Workstream(branch) => {
                    prop_assert!(before.is_empty() && salvaged.is_none());
                    prop_assert_eq!(branch, "ws");
                }
            }
        }

        /// Room never exceeds the free places, and a runner with none free claims nothing.
        #[test]
        fn room_is_the_free_places(configured in 0u32..64, in_flight in 0usize..80) {
            let limit = concurrency(configured);
            let free = room(limit, in_flight);
            prop_assert!(limit >= 1);
            prop_assert!(free <= limit);
            prop_assert_eq!(free + in_flight.min(limit), limit);
        }

        /// Never more spares than [`MOST_SPARES`] or than the agents that could start.
        #[test]
        fn spares_are_bounded(room in 0usize..64, spawned: bool) {
            if let SpareStep::Make { wanted } = spare_step(true, room, spawned) {
                prop_assert!(wanted <= MOST_SPARES && wanted <= room);
            }
        }
    }
}
