//! Attempts: a retried brief keeps its title and takes the next attempt number, so "the current brief of a
//! title" is its newest attempt that was not cancelled. Every decision about a squad or a mesh looks at
//! current attempts only.

use std::collections::BTreeMap;

use agency_core::{Brief, BriefId, BriefStatus, Tier};
use chrono::{DateTime, Utc};

/// What [`latest_of`] and a squad's checks read of a brief: a whole [`Brief`], or any lighter record of it
/// the engine reads without its contents.
pub trait Attempt {
    /// The brief's id.
    fn id(&self) -> BriefId;
    /// Its tier.
    fn tier(&self) -> Tier;
    /// Its workstream.
    fn workstream(&self) -> &str;
    /// Its title, shared by all its attempts.
    fn title(&self) -> &str;
    /// Which attempt at its title it is.
    fn attempt(&self) -> u32;
    /// Its status.
    fn status(&self) -> BriefStatus;
    /// When it was written.
    fn created_at(&self) -> DateTime<Utc>;
}

impl Attempt for Brief {
    fn id(&self) -> BriefId {
        self.id
    }
    fn tier(&self) -> Tier {
        self.tier
    }
    fn workstream(&self) -> &str {
        &self.workstream
    }
    fn title(&self) -> &str {
        &self.title
    }
    fn attempt(&self) -> u32 {
        self.attempt
    }
    fn status(&self) -> BriefStatus {
        self.status
    }
    fn created_at(&self) -> DateTime<Utc> {
        self.created_at
    }
}

/// The statuses of a brief that is not finished: waiting, at work, or being signed off.
pub const OPEN: [BriefStatus; 3] = [BriefStatus::Pending, BriefStatus::Running, BriefStatus::Verifying];

/// The newest attempt of each title among `children` (oldest first), skipping cancelled ones. Attempts of
/// one brief share its title, tier and workstream: the plan's children are the entries of every
/// workstream, and two of them may share a title (two workstreams' extra passes, `amended-pass-1`) without
/// being attempts of each other.
pub fn latest_of<'a, B: Attempt + 'a>(children: impl Iterator<Item = &'a B>) -> Vec<&'a B> {
    let mut by_title: BTreeMap<(&str, Tier, &str), &B> = BTreeMap::new();
    for brief in children.filter(|b| b.status() != BriefStatus::Cancelled) {
        let key = (brief.title(), brief.tier(), brief.workstream());
        let keep = by_title.get(&key).is_none_or(|b| b.attempt() <= brief.attempt());
        if keep {
            by_title.insert(key, brief);
        }
    }
    let mut list: Vec<&B> = by_title.into_values().collect();
    list.sort_by_key(|b| b.created_at());
    list
}

/// The current tasks (newest attempts, T4, of `workstream`) among `siblings`, in [`latest_of`]'s order,
/// when there are some and every one is done; `None` while the squad has none or one is not done.
pub fn current_done_tasks<'a, B: Attempt>(siblings: &'a [B], workstream: &str) -> Option<Vec<&'a B>> {
    let tasks: Vec<&B> = latest_of(siblings.iter())
        .into_iter()
        .filter(|b| b.tier() == Tier::T4 && b.workstream() == workstream)
        .collect();
    let done = !tasks.is_empty() && tasks.iter().all(|t| t.status() == BriefStatus::Done);
    done.then_some(tasks)
}

/// Whether a task's sign-off passed in an earlier round: among its `children`, the newest verifier is
/// `done`. A task not judged in the current round must have, for the round to be complete.
pub fn verified_before<'a, B: Attempt + 'a>(children: impl Iterator<Item = &'a B>) -> bool {
    latest_of(children)
        .iter()
        .any(|v| v.tier() == Tier::T5 && v.status() == BriefStatus::Done)
}

/// The newest verifier among a task's `children`, if it has one.
pub fn current_verifier<'a, B: Attempt + 'a>(children: impl Iterator<Item = &'a B>) -> Option<&'a B> {
    latest_of(children).into_iter().find(|b| b.tier() == Tier::T5)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A brief for the tests: only what the decisions read is set.
    pub(crate) fn brief(tier: Tier, title: &str, attempt: u32, status: BriefStatus) -> Brief {
        let run = agency_core::RunId::new();
        Brief {
            id: BriefId::new(),
            run,
            parent: None,
            tier,
            workstream: "ws".into(),
            title: title.into(),
            personality: None,
            goal_anchor: "goal".into(),
            instructions: String::new(),
            inputs: Vec::new(),
            variety: None,
            contract: None,
            retry_budget: 2,
            attempt,
            depends_on: Vec::new(),
            branch: None,
            worktree: None,
            status,
            teachback: agency_core::TeachbackState::Pending,
            claimed_by: None,
            created_at: Utc::now(),
        }
    }

    #[test]
    fn briefs_of_one_title_in_two_workstreams_or_tiers_are_not_attempts_of_each_other() {
        let mut squad = brief(Tier::T3, "amended-pass-1", 0, BriefStatus::Verifying);
        squad.workstream = "ws-3".into();
        let mut implementer = brief(Tier::T4, "amended-pass-1", 0, BriefStatus::Running);
        implementer.workstream = "ws-8".into();
        let mut other_ws = brief(Tier::T4, "amended-pass-1", 1, BriefStatus::Running);
        other_ws.workstream = "ws-9".into();
        let all = [squad.clone(), implementer.clone(), other_ws.clone()];
        let latest: Vec<BriefId> = latest_of(all.iter()).iter().map(|b| b.id).collect();
        assert_eq!(latest.len(), 3, "each is its own brief");
        assert!(latest.contains(&squad.id) && latest.contains(&implementer.id));
    }

    #[test]
    fn the_newest_attempt_of_each_title_counts_and_a_cancelled_one_never_does() {
        let old = brief(Tier::T4, "a", 0, BriefStatus::Failed);
        let new = brief(Tier::T4, "a", 1, BriefStatus::Done);
        let dropped = brief(Tier::T4, "a", 2, BriefStatus::Cancelled);
        let other = brief(Tier::T4, "b", 0, BriefStatus::Running);
        let all = [old, new.clone(), dropped, other.clone()];
        let latest: Vec<BriefId> = latest_of(all.iter()).iter().map(|b| b.id).collect();
        assert_eq!(latest, [new.id, other.id]);
        assert!(current_done_tasks(&all, "ws").is_none(), "b is still running");
        let done = [new.clone(), brief(Tier::T4, "b", 0, BriefStatus::Done)];
        assert_eq!(current_done_tasks(&done, "ws").map(|t| t.len()), Some(2));
        assert!(current_done_tasks(&done, "elsewhere").is_none(), "no tasks there");
    }

    #[test]
    fn a_task_passed_before_when_its_newest_verifier_is_done() {
        let failed = brief(Tier::T5, "a", 0, BriefStatus::Done);
        let again = brief(Tier::T5, "a", 1, BriefStatus::Verifying);
        assert!(verified_before([failed.clone()].iter()));
        assert!(!verified_before([failed.clone(), again.clone()].iter()));
        assert_eq!(
            current_verifier([failed, again.clone()].iter()).map(|v| v.id),
            Some(again.id)
        );
    }
}
