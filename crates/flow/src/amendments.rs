//! Path amendments (seed 001, "Dynamic Paths"): what a workstream's tier path becomes when a proposed
//! change is approved, whether it still applies where the workstream stands, and what the runner writes
//! next to follow it.
//!
//! A path is a run of **passes** followed by `t5`. A pass goes strictly downward through `t2`, `t3`, `t4`
//! and ends in `t4` (its tasks are implemented; every implementer's slice is verified by a T5): `t3→t4→t5`
//! is one pass, `t3→t4→t3→t4→t5` two (a second squad-lead pass after the first is verified), `t2→t4→t5`
//! one (the specialists' output goes straight to implementers). A new pass starts wherever the path stops
//! going downward.
//!
//! An amendment changes only the *remaining* path: the tiers after the workstream's position (the tiers it
//! has started, counted from the blackboard when the change is proposed and again when it is approved).
//! The tiers already started stay as they are, and verification stays last.
//!
//! Every pass after the first starts with one entry brief titled `amended-pass-<n>` (`n` its 0-based index
//! on the path), written under the plan brief once the pass before it is verified ([`after_pass`],
//! [`pass_entry`]); which pass a brief belongs to is read from its entry's title ([`pass_of_entry`]). A
//! pass that starts with `t2` is a second architecture pass: its entry is a T2 lead (the title's pass index
//! tells it from the first pass's `lead`), told what the earlier passes built ([`earlier_passes_text`]).

use agency_core::Tier;
use agency_core::event::payload::PathChange;
use agency_core::tiers::{EXTRA_PASS_PREFIX, extra_pass_index};

/// A path in words: `t3→t4→t5` (the one spelling, shared with the records' readers).
pub use agency_core::tier::path_text;

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
    /// `insert_before` names a tier that is on neither the started nor the remaining path.
    #[error("insert_before {tier} is not on the workstream's remaining path {remaining}")]
    NotRemaining {
        /// The tier named.
        tier: Tier,
        /// The remaining path, `t4→t5`.
        remaining: String,
    },
    /// `insert_before` names a tier the workstream has started already (it moved past the insert point,
    /// perhaps while the amendment waited for a human).
    #[error(
        "the workstream has started {tier} already (started: {started}); its remaining path is {remaining}, \
         so nothing can go before that {tier} any more"
    )]
    MovedPast {
        /// The tier named.
        tier: Tier,
        /// The tiers started, `t3→t4`.
        started: String,
        /// The remaining path.
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
    /// `t5` before the end: verification follows every pass by itself.
    #[error("t5 may only end the path (every pass's slices are verified anyway), found {0}")]
    VerificationInside(String),
    /// `t1` in a workstream's path.
    #[error("t1 plans and accepts the whole run and cannot be on a workstream's path, found {0}")]
    PlannerOnPath(String),
    /// A pass that plans work nobody implements.
    #[error(
        "{path}: the pass {pass} does not end in t4 — every pass ends with implementers (drop it, or add t4)"
    )]
    PassWithoutImplementers {
        /// The whole path.
        path: String,
        /// The pass, `t2→t3`.
        pass: String,
    },
    /// A shallower path that drops or reorders tiers the workstream already started.
    #[error("shallower_path {proposed} does not keep the tiers already started ({passed})")]
    RewritesThePast {
        /// The path proposed.
        proposed: String,
        /// The tiers already started.
        passed: String,
    },
}

/// The passes of `path` (everything before its final `t5`), each a strictly downward run of tiers.
pub fn passes(path: &[Tier]) -> Vec<&[Tier]> {
    let body = match path.split_last() {
        Some((Tier::T5, body)) => body,
        _ => path,
    };
    let mut found = Vec::new();
    let mut start = 0;
    for i in 1..body.len() {
        if body[i] <= body[i - 1] {
            found.push(&body[start..i]);
            start = i;
        }
    }
    if start < body.len() {
        found.push(&body[start..]);
    }
    found
}

/// Whether `path` is one the runner can walk: no `t1`, `t5` once and last, and every pass ending in `t4`.
pub fn check_path(path: &[Tier]) -> Result<(), AmendmentError> {
    let text = path_text(path);
    if path.contains(&Tier::T1) {
        return Err(AmendmentError::PlannerOnPath(text));
    }
    if path.last() != Some(&Tier::T5) {
        return Err(AmendmentError::NoVerification(text));
    }
    if path[..path.len() - 1].contains(&Tier::T5) {
        return Err(AmendmentError::VerificationInside(text));
    }
    let all = passes(path);
    if all.is_empty() {
        return Err(AmendmentError::PassWithoutImplementers {
            path: text,
            pass: "(none)".into(),
        });
    }
    if let Some(pass) = all.iter().find(|p| p.last() != Some(&Tier::T4)) {
        return Err(AmendmentError::PassWithoutImplementers {
            path: text,
            pass: path_text(pass),
        });
    }
    Ok(())
}

/// Where a workstream stands, as the runner reads it from the blackboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// How many passes have an entry brief (0: the workstream has not started).
    pub passes_started: usize,
    /// The deepest tier (T2..T4) any brief of the newest pass reached; `None` before it has one.
    pub deepest: Option<Tier>,
}

/// How many tiers of `path` the workstream at `progress` has started: every tier of the passes before
/// its newest, and the tiers of the newest down to the deepest one it reached.
pub fn position(path: &[Tier], progress: Progress) -> usize {
    let all = passes(path);
    if progress.passes_started == 0 || all.is_empty() {
        return 0;
    }
    let current = progress.passes_started.min(all.len()) - 1;
    let before: usize = all[..current].iter().map(|p| p.len()).sum();
    let within = progress.deepest.map_or(0, |deepest| {
        all[current].iter().filter(|t| **t <= deepest).count()
    });
    before + within
}

/// The path `change` makes of `path` for a workstream that has started its first `started` tiers.
///
/// - `add_tiers` + `insert_before`: the tiers go just before the first `insert_before` still to come. An
///   added pass that would end in `t2` or `t3` gets its `t4` (its tasks are implemented): `t3→t4→t5` + add
///   `t3` before `t5` = `t3→t4→t3→t4→t5`;
/// - `shallower_path`: the path becomes it, if it is shorter, keeps the started tiers as its start and has a
///   reason.
///
/// Either way the result is a path [`check_path`] accepts.
pub fn amended_path(path: &[Tier], started: usize, change: &PathChange) -> Result<Vec<Tier>, AmendmentError> {
    let done = started.min(path.len());
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
            if let Some(amended) = new_pass_before_started(path, done, &change.add_tiers, before) {
                check_path(&amended)?;
                return Ok(amended);
            }
            let Some(offset) = path[done..].iter().position(|t| *t == before) else {
                let remaining = path_text(&path[done..]);
                return Err(if path[..done].contains(&before) {
                    AmendmentError::MovedPast {
                        tier: before,
                        started: path_text(&path[..done]),
                        remaining,
                    }
                } else {
                    AmendmentError::NotRemaining {
                        tier: before,
                        remaining,
                    }
                });
            };
            let mut added = change.add_tiers.clone();
            // A planning tier whose next tier does not go down from it ends a pass: its tasks need their
            // implementers.
            if let Some(&last) = added.last()
                && last != Tier::T4
                && (before == Tier::T5 || before <= last)
            {
                added.push(Tier::T4);
            }
            let mut amended = path.to_vec();
            let at = done + offset;
            amended.splice(at..at, added);
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
    check_path(&amended)?;
    Ok(amended)
}

/// The seed's own example read where the workstream stands: a tier at work in the pass in progress asks for
/// tiers above one that pass has started (a T3 at work: `add_tiers: [t2]`, `insert_before: t3`). Nothing
/// can go before that tier any more, so the change asks for a new pass after the one in progress: the
/// added tiers, then that pass's tiers again from `before` on (`t3→t4→t5` → `t3→t4→t2→t3→t4→t5`). `None`
/// when the change is not of that kind (`before` is still to come, is not in the pass in progress, or an
/// added tier is not above it).
fn new_pass_before_started(path: &[Tier], done: usize, added: &[Tier], before: Tier) -> Option<Vec<Tier>> {
    if done == 0 || path[done..].contains(&before) || added.iter().any(|t| *t >= before) {
        return None;
    }
    let (start, end) = pass_bounds(path, done - 1)?;
    let from = start + path[start..done].iter().position(|t| *t == before)?;
    let mut amended = path.to_vec();
    let again: Vec<Tier> = added.iter().chain(&path[from..end]).copied().collect();
    amended.splice(end..end, again);
    Some(amended)
}

/// The start and end (exclusive) in `path` of the pass holding the tier at `at`; `None` for the final `t5`.
fn pass_bounds(path: &[Tier], at: usize) -> Option<(usize, usize)> {
    let mut start = 0;
    for pass in passes(path) {
        let end = start + pass.len();
        if at < end {
            return Some((start, end));
        }
        start = end;
    }
    None
}

/// A decided approval as the path's history keeps it: the path it was made on and the path it gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval<'a> {
    /// The `path_amendment` event's seq.
    pub seq: i64,
    /// The path when it was approved.
    pub before: &'a [Tier],
    /// The path it gave.
    pub after: &'a [Tier],
}

/// `workstream`'s path today: the plan's path, then each approval in the order made, where it was made on
/// the path of the moment. One made on another path (the plan was re-made since) is not followed: nobody
/// approved it for this plan. The second list holds the `seq`s of those skipped.
pub fn current_path<'a>(
    planned: &[Tier],
    approved: impl IntoIterator<Item = Approval<'a>>,
) -> (Vec<Tier>, Vec<i64>) {
    let mut path = planned.to_vec();
    let mut skipped = Vec::new();
    for approval in approved {
        if approval.before == path.as_slice() && !approval.after.is_empty() {
            path = approval.after.to_vec();
        } else {
            skipped.push(approval.seq);
        }
    }
    (path, skipped)
}

/// What the runner writes when a workstream's verified pass is in and before it merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterPass {
    /// The path has no more passes: the workstream merges.
    Merge,
    /// The next pass starts: its entry brief, of `tier`, titled [`extra_pass_title`]`(index)`.
    Start {
        /// The pass's 0-based index on the path (1 for the first extra pass).
        index: usize,
        /// Its first tier.
        tier: Tier,
    },
}

/// What follows a workstream's passes once the newest (of `passes_started`) is verified.
pub fn after_pass(path: &[Tier], passes_started: usize) -> AfterPass {
    match passes(path).get(passes_started).and_then(|p| p.first()) {
        Some(&tier) => AfterPass::Start {
            index: passes_started,
            tier,
        },
        None => AfterPass::Merge,
    }
}

/// The tier that follows the architecture (T2) pass at 0-based index `pass` on a workstream's path: `t3`
/// (squads), `t4` (the specialists' squads go straight to implementers: the squad lead skipped), or `None`
/// when that pass has no T2.
pub fn after_architecture(path: &[Tier], pass: usize) -> Option<Tier> {
    match passes(path).get(pass)? {
        [Tier::T2, next, ..] => Some(*next),
        _ => None,
    }
}

/// The title of a workstream's extra pass at 0-based index `n` on its path (from 1).
pub fn extra_pass_title(n: usize) -> String {
    format!("{EXTRA_PASS_PREFIX}{n}")
}

/// The 0-based index on its workstream's path of the pass whose entry brief (a child of the plan brief) is
/// titled `entry_title`: `n` for `amended-pass-<n>`, 0 for the first pass's entry (`lead`, the squad's or
/// the task's own name). Every brief of a pass descends from its entry, so this is the pass of each one.
pub fn pass_of_entry(entry_title: &str) -> usize {
    extra_pass_index(entry_title).unwrap_or(0)
}

/// The approval that gave a pass: what its entry brief says it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassReason<'a> {
    /// The amendment's number (`#12`).
    pub seq: i64,
    /// Who approved it.
    pub by: &'a str,
    /// Why it was proposed.
    pub reason: &'a str,
}

/// The entry brief of a pass after the first, as the runner writes it under the plan brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassEntry {
    /// The pass's 0-based index on the path.
    pub index: usize,
    /// Its first tier: T2 (a second architecture pass: a lead), T3 (a squad lead) or T4 (an implementer).
    pub tier: Tier,
    /// `amended-pass-<index>`.
    pub title: String,
    /// What it is told: the approval's reason, and that the earlier passes are done on the branch.
    pub instructions: String,
    /// The artifacts it reads: the earlier passes' record ([`earlier_passes_name`]), then the diffs of the
    /// earlier passes' slices as given.
    pub inputs: Vec<String>,
}

/// The name of the record of what `workstream`'s passes before pass `index` built, written as that pass
/// starts (and never again: the pass reads what stood when it began, not a later pass's architecture).
pub fn earlier_passes_name(workstream: &str, index: usize) -> String {
    format!("passes/{workstream}/before-{index}")
}

/// What a workstream at `passes_started` passes of `path`, its newest verified, writes next: the entry of the
/// next pass, `None` when none is left (it merges). `earlier_diffs` are the artifact names of the earlier
/// passes' slices' diffs; `notes` the plan's notes for the workstream.
pub fn pass_entry(
    path: &[Tier],
    passes_started: usize,
    workstream: &str,
    why: PassReason<'_>,
    notes: &str,
    earlier_diffs: &[String],
) -> Option<PassEntry> {
    let AfterPass::Start { index, tier } = after_pass(path, passes_started) else {
        return None;
    };
    let record = earlier_passes_name(workstream, index);
    let (what, then) = match tier {
        Tier::T2 => (
            "A second architecture pass",
            format!(
                "What the earlier passes built (their canonical architecture, boundaries and merged slices) is                  your input {record}; their diffs follow it. Draw the boundaries and specialists for what this                  pass adds or changes on top of that work, not the whole workstream again; each specialist's                  squads then plan and build it on the workstream's branch"
            ),
        ),
        Tier::T3 => (
            "An extra squad-lead pass",
            format!("What they built is your input {record}; plan only the tasks this pass needs"),
        ),
        _ => (
            "An extra implementer pass",
            format!("What they built is your input {record}; do only what this pass needs"),
        ),
    };
    let mut inputs = vec![record];
    inputs.extend(earlier_diffs.iter().cloned());
    Some(PassEntry {
        index,
        tier,
        title: extra_pass_title(index),
        instructions: format!(
            "{what} (pass {} of the path {}), approved by {} as path amendment #{}: {}\nThe workstream's \
             earlier passes are done, verified and merged on its branch. {then}.\n{notes}",
            index + 1,
            path_text(path),
            why.by,
            why.seq,
            why.reason,
        ),
        inputs,
    })
}

/// One earlier pass of a workstream as the next pass is told of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EarlierPass {
    /// Its 0-based index.
    pub index: usize,
    /// Its entry brief's tier and title.
    pub entry: String,
    /// The lead's boundaries and shared assumptions (JSON), when the pass had a T2.
    pub boundaries: Option<String>,
    /// The canonical architecture its synthesis wrote, when the pass had a T2.
    pub architecture: Option<String>,
    /// Its accepted slices: title and what the implementer was asked.
    pub slices: Vec<(String, String)>,
}

/// The record [`earlier_passes_name`] names, in markdown.
pub fn earlier_passes_text(workstream: &str, path: &[Tier], earlier: &[EarlierPass]) -> String {
    let mut text = format!(
        "# What {workstream}'s earlier passes built\n\nPath: {} — {} earlier pass{}, merged on the workstream's \
         branch.\n",
        path_text(path),
        earlier.len(),
        if earlier.len() == 1 { "" } else { "es" }
    );
    for pass in earlier {
        text.push_str(&format!("\n## Pass {} ({})\n", pass.index + 1, pass.entry));
        if let Some(architecture) = &pass.architecture {
            text.push_str(&format!(
                "\n### Canonical architecture\n\n{}\n",
                architecture.trim_end()
            ));
        }
        if let Some(boundaries) = &pass.boundaries {
            text.push_str(&format!(
                "\n### Boundaries\n\n```json\n{}\n```\n",
                boundaries.trim_end()
            ));
        }
        text.push_str("\n### Slices merged\n\n");
        if pass.slices.is_empty() {
            text.push_str("(none recorded)\n");
        }
        for (title, asked) in &pass.slices {
            let first = asked.lines().next().unwrap_or_default();
            text.push_str(&format!("- {title}: {first}\n"));
        }
    }
    text
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

    fn at(passes_started: usize, deepest: Option<Tier>) -> Progress {
        Progress {
            passes_started,
            deepest,
        }
    }

    #[test]
    fn a_path_splits_into_downward_passes() {
        assert_eq!(passes(&[T2, T3, T4, T5]), vec![&[T2, T3, T4][..]]);
        assert_eq!(passes(&[T3, T4, T3, T4, T5]), vec![&[T3, T4][..], &[T3, T4][..]]);
        assert_eq!(passes(&[T3, T4, T4, T5]), vec![&[T3, T4][..], &[T4][..]]);
        assert!(passes(&[T5]).is_empty());
    }

    #[test]
    fn position_counts_the_started_passes_and_the_newest_ones_depth() {
        let path = [T2, T3, T4, T3, T4, T5];
        assert_eq!(position(&path, at(0, None)), 0);
        assert_eq!(position(&path, at(1, Some(T2))), 1);
        assert_eq!(position(&path, at(1, Some(T3))), 2);
        assert_eq!(position(&path, at(1, Some(T4))), 3);
        assert_eq!(position(&path, at(2, Some(T3))), 4);
        assert_eq!(position(&path, at(2, Some(T4))), 5);
        // A skipped squad lead: the specialists' tasks went straight to implementers.
        assert_eq!(position(&[T2, T4, T5], at(1, Some(T4))), 2);
    }

    #[test]
    fn a_t4_adds_an_extra_squad_pass_with_its_implementers() {
        let path = amended_path(&[T3, T4, T5], 2, &add(&[T3], T5)).unwrap();
        assert_eq!(path, vec![T3, T4, T3, T4, T5]);
        assert_eq!(amended_path(&[T3, T4, T5], 2, &add(&[T3, T4], T5)).unwrap(), path);
        assert_eq!(after_pass(&path, 1), AfterPass::Start { index: 1, tier: T3 });
        assert_eq!(after_pass(&path, 2), AfterPass::Merge);
    }

    #[test]
    fn an_extra_implementer_pass_follows_the_first() {
        let path = amended_path(&[T3, T4, T5], 2, &add(&[T4], T5)).unwrap();
        assert_eq!(path, vec![T3, T4, T4, T5]);
        assert_eq!(after_pass(&path, 1), AfterPass::Start { index: 1, tier: T4 });
    }

    #[test]
    fn the_seeds_example_adds_a_t2_pass_before_a_t3_not_started() {
        let path = amended_path(&[T3, T4, T5], 0, &add(&[T2], T3)).unwrap();
        assert_eq!(path, vec![T2, T3, T4, T5]);
        assert_eq!(after_architecture(&path, 0), Some(T3));
    }

    #[test]
    fn a_shallower_path_skips_the_squad_lead_while_t2_works() {
        let path = amended_path(&[T2, T3, T4, T5], 1, &shallower(&[T2, T4, T5], "one file")).unwrap();
        assert_eq!(path, vec![T2, T4, T5]);
        assert_eq!(after_architecture(&path, 0), Some(T4));
        // And an extra squad pass may come back before the implementers.
        assert_eq!(
            amended_path(&path, 1, &add(&[T3], T4)).unwrap(),
            vec![T2, T3, T4, T5]
        );
    }

    #[test]
    fn an_insert_point_the_workstream_moved_past_is_refused_with_where_it_stands() {
        // An implementer can no longer be put before the squad lead at work.
        let err = amended_path(&[T3, T4, T5], 1, &add(&[T4], T3)).unwrap_err();
        assert_eq!(
            err,
            AmendmentError::MovedPast {
                tier: T3,
                started: "t3".into(),
                remaining: "t4→t5".into()
            }
        );
        assert!(err.to_string().contains("has started t3 already"), "{err}");
        // A tier of an earlier pass is not the pass in progress.
        assert!(matches!(
            amended_path(&[T3, T4, T4, T5], 3, &add(&[T2], T3)),
            Err(AmendmentError::MovedPast { .. })
        ));
        // Skipping the squad lead once it is at work rewrites the past.
        assert!(matches!(
            amended_path(&[T2, T3, T4, T5], 2, &shallower(&[T2, T4, T5], "small")),
            Err(AmendmentError::RewritesThePast { .. })
        ));
    }

    #[test]
    fn the_seeds_t3_at_work_asking_for_a_t2_pass_gets_a_second_pass_after_its_own() {
        // seed 001: `"proposed_by": "t3/…", "add_tiers": ["t2"], "insert_before": "t3"`, the T3 at work.
        let path = amended_path(&[T3, T4, T5], 1, &add(&[T2], T3)).unwrap();
        assert_eq!(path, vec![T3, T4, T2, T3, T4, T5]);
        // Its implementers at work ask the same: the same path.
        assert_eq!(amended_path(&[T3, T4, T5], 2, &add(&[T2], T3)).unwrap(), path);
        assert_eq!(after_pass(&path, 1), AfterPass::Start { index: 1, tier: T2 });
        assert_eq!(after_architecture(&path, 1), Some(T3));
        assert_eq!(after_architecture(&path, 0), None);
        // A workstream that began with T2 asks for another architecture pass from its squad lead.
        assert_eq!(
            amended_path(&[T2, T3, T4, T5], 2, &add(&[T2], T3)).unwrap(),
            vec![T2, T3, T4, T2, T3, T4, T5]
        );
        // And from T2 straight to its implementers.
        assert_eq!(
            amended_path(&[T2, T4, T5], 2, &add(&[T2], T4)).unwrap(),
            vec![T2, T4, T2, T4, T5]
        );
    }

    #[test]
    fn changes_that_say_nothing_or_too_much_are_refused() {
        let empty = PathChange {
            workstream: "ws".into(),
            ..PathChange::default()
        };
        assert_eq!(amended_path(&[T4, T5], 0, &empty), Err(AmendmentError::Empty));
        let mut both = add(&[T3], T5);
        both.shallower_path = Some(vec![T5]);
        assert_eq!(amended_path(&[T4, T5], 0, &both), Err(AmendmentError::Both));
        let mut no_point = add(&[T3], T5);
        no_point.insert_before = None;
        assert_eq!(
            amended_path(&[T4, T5], 0, &no_point),
            Err(AmendmentError::NoInsertPoint)
        );
        assert_eq!(
            amended_path(&[T4, T5], 0, &add(&[T1], T4)),
            Err(AmendmentError::NotAddable(T1))
        );
        assert_eq!(
            amended_path(&[T4, T5], 0, &add(&[T5], T5)),
            Err(AmendmentError::NotAddable(T5))
        );
        assert_eq!(
            amended_path(&[T4, T5], 0, &add(&[T3], T2)),
            Err(AmendmentError::NotRemaining {
                tier: T2,
                remaining: "t4→t5".into()
            })
        );
    }

    #[test]
    fn a_pass_without_implementers_is_refused() {
        // An extra squad lead squeezed between the first squad lead and its implementers plans nothing.
        let err = amended_path(&[T3, T4, T5], 1, &add(&[T3], T4)).unwrap_err();
        assert!(
            matches!(err, AmendmentError::PassWithoutImplementers { .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains("the pass t3 does not end in t4"),
            "{err}"
        );
        assert!(matches!(
            amended_path(&[T2, T3, T4, T5], 0, &shallower(&[T2, T3, T5], "no code")),
            Err(AmendmentError::PassWithoutImplementers { .. })
        ));
    }

    #[test]
    fn a_shallower_path_needs_a_reason_and_must_be_shallower() {
        let full = [T2, T3, T4, T5];
        assert_eq!(
            amended_path(&full, 0, &shallower(&[T4, T5], " ")),
            Err(AmendmentError::NoReason)
        );
        assert!(matches!(
            amended_path(&[T4, T5], 0, &shallower(&[T3, T5], "why")),
            Err(AmendmentError::NotShallower { .. })
        ));
        assert_eq!(
            amended_path(&full, 0, &shallower(&[T4], "no checks")),
            Err(AmendmentError::NoVerification("t4".into()))
        );
        assert_eq!(
            amended_path(&full, 0, &shallower(&[T4, T5, T5], "x")),
            Err(AmendmentError::VerificationInside("t4→t5→t5".into()))
        );
        assert_eq!(
            amended_path(&full, 0, &shallower(&[T5, T4, T5], "x")),
            Err(AmendmentError::VerificationInside("t5→t4→t5".into()))
        );
        assert_eq!(
            amended_path(&full, 0, &shallower(&[T1, T4, T5], "x")),
            Err(AmendmentError::PlannerOnPath("t1→t4→t5".into()))
        );
    }

    #[test]
    fn a_second_architecture_pass_starts_with_a_lead_told_what_the_first_built() {
        let path = amended_path(&[T3, T4, T5], 2, &add(&[T2, T3], T5)).unwrap();
        assert_eq!(path, vec![T3, T4, T2, T3, T4, T5]);
        let why = PassReason {
            seq: 7,
            by: "cli:alice",
            reason: "auth needs design",
        };
        let diffs = vec!["diff/abc".to_string()];
        let entry = pass_entry(&path, 1, "ws-api", why, "the notes", &diffs).unwrap();
        assert_eq!((entry.index, entry.tier), (1, T2));
        assert_eq!(entry.title, "amended-pass-1");
        assert_eq!(pass_of_entry(&entry.title), 1);
        assert_eq!(
            agency_core::tiers::BriefRole::for_title(entry.tier, &entry.title),
            agency_core::tiers::BriefRole::Lead
        );
        assert_eq!(
            entry.inputs,
            vec!["passes/ws-api/before-1".to_string(), "diff/abc".into()]
        );
        assert!(
            entry.instructions.starts_with(
                "A second architecture pass (pass 2 of the path t3→t4→t2→t3→t4→t5), approved by cli:alice \
                 as path amendment #7: auth needs design"
            ),
            "{}",
            entry.instructions
        );
        assert!(
            entry.instructions.ends_with("the notes"),
            "{}",
            entry.instructions
        );
        assert_eq!(pass_entry(&path, 2, "ws-api", why, "", &[]), None);
        assert_eq!(pass_of_entry("lead"), 0);
        assert_eq!(pass_of_entry("arithmetic"), 0);
    }

    #[test]
    fn the_earlier_passes_record_holds_architecture_and_slices() {
        let text = earlier_passes_text(
            "ws-api",
            &[T2, T3, T4, T2, T3, T4, T5],
            &[EarlierPass {
                index: 0,
                entry: "t2 lead".into(),
                boundaries: Some("{\"boundaries\": []}".into()),
                architecture: Some("REST over HTTP".into()),
                slices: vec![("fix-add".into(), "Make add.sh add.\nMore.".into())],
            }],
        );
        assert!(text.contains("1 earlier pass, merged"), "{text}");
        assert!(text.contains("## Pass 1 (t2 lead)"), "{text}");
        assert!(text.contains("REST over HTTP"), "{text}");
        assert!(text.contains("- fix-add: Make add.sh add.\n"), "{text}");
        assert!(!text.contains("More."), "{text}");
    }

    #[test]
    fn approvals_apply_in_order_and_one_made_on_another_path_is_skipped() {
        let first = [T3, T4, T3, T4, T5];
        let second = [T3, T4, T3, T4, T4, T5];
        let other_plan = [T2, T3, T4, T5];
        let (path, skipped) = current_path(
            &[T3, T4, T5],
            [
                Approval {
                    seq: 10,
                    before: &[T3, T4, T5],
                    after: &first,
                },
                Approval {
                    seq: 12,
                    before: &first,
                    after: &second,
                },
                Approval {
                    seq: 14,
                    before: &other_plan,
                    after: &[T2, T4, T5],
                },
            ],
        );
        assert_eq!(path, second);
        assert_eq!(skipped, vec![14]);
    }

    fn tier(i: usize) -> Tier {
        Tier::ALL[i]
    }

    /// A valid path: one to three passes, each a downward run of t2..t4 ending in t4, then t5.
    fn valid_path() -> impl proptest::strategy::Strategy<Value = Vec<Tier>> {
        use proptest::prelude::*;
        proptest::collection::vec((any::<bool>(), any::<bool>()), 1..4).prop_map(|passes| {
            let mut path = Vec::new();
            for (t2, t3) in passes {
                if t2 {
                    path.push(T2);
                }
                if t3 {
                    path.push(T3);
                }
                path.push(T4);
            }
            path.push(T5);
            path
        })
    }

    proptest::proptest! {
        /// Whatever is proposed wherever the workstream stands, an accepted change is a path the runner can
        /// walk, keeps every tier started, and leaves implementers to come when some were to come.
        #[test]
        fn an_accepted_change_is_valid_keeps_the_past_and_never_drops_t4(
            path in valid_path(),
            started in 0usize..8,
            added in proptest::collection::vec(0usize..5, 0..3),
            before in 0usize..5,
            shallow in proptest::option::of(proptest::collection::vec(0usize..5, 0..6)),
        ) {
            let started = started.min(path.len() - 1);
            let change = PathChange {
                workstream: "ws".into(),
                add_tiers: added.into_iter().map(tier).collect(),
                insert_before: Some(tier(before)),
                shallower_path: shallow.map(|s| s.into_iter().map(tier).collect()),
                shallower_path_reason: Some("why".into()),
            };
            if let Ok(amended) = amended_path(&path, started, &change) {
                proptest::prop_assert!(check_path(&amended).is_ok(), "{:?}", amended);
                proptest::prop_assert!(
                    amended.starts_with(&path[..started]),
                    "re-runs or drops a started tier"
                );
                if path[started..].contains(&T4) {
                    proptest::prop_assert!(amended[started..].contains(&T4), "drops T4 while work remains");
                }
                proptest::prop_assert_eq!(amended.last(), Some(&T5));
            }
        }

        /// Walking a path of one to three passes pass by pass, each pass after the first writes exactly one
        /// entry brief, of its own first tier, whose title names its index; no pass is written twice, and
        /// the walk ends in a merge once every pass ran. An amendment approved on the way (wherever it is
        /// accepted) never re-runs a finished pass.
        #[test]
        fn each_pass_writes_one_entry_and_no_finished_pass_reruns(
            path in valid_path(),
            amend_at in 0usize..4,
            added in proptest::collection::vec(1usize..4, 1..3),
            before in 1usize..5,
        ) {
            let why = PassReason { seq: 1, by: "h", reason: "r" };
            let mut path = path;
            let mut started = 1;
            let mut titles: Vec<String> = Vec::new();
            let mut finished: Vec<Vec<Tier>> = vec![passes(&path)[0].to_vec()];
            for step in 0..8 {
                if step == amend_at {
                    let at = position(&path, Progress { passes_started: started, deepest: Some(T4) });
                    let change = PathChange {
                        workstream: "ws".into(),
                        add_tiers: added.iter().map(|i| tier(*i)).collect(),
                        insert_before: Some(tier(before)),
                        ..PathChange::default()
                    };
                    if let Ok(amended) = amended_path(&path, at, &change) {
                        let done: Vec<Vec<Tier>> = passes(&amended)[..started].iter().map(|p| p.to_vec()).collect();
                        proptest::prop_assert_eq!(&done, &finished, "a finished pass changed");
                        path = amended;
                    }
                }
                match pass_entry(&path, started, "ws", why, "", &[]) {
                    None => {
                        proptest::prop_assert_eq!(after_pass(&path, started), AfterPass::Merge);
                        break;
                    }
                    Some(entry) => {
                        proptest::prop_assert_eq!(entry.index, started);
                        proptest::prop_assert_eq!(pass_of_entry(&entry.title), started);
                        proptest::prop_assert_eq!(Some(&entry.tier), passes(&path)[started].first());
                        proptest::prop_assert!(!titles.contains(&entry.title), "{} twice", entry.title);
                        titles.push(entry.title);
                        finished.push(passes(&path)[started].to_vec());
                        started += 1;
                    }
                }
            }
            proptest::prop_assert_eq!(started, passes(&path).len());
            proptest::prop_assert_eq!(titles.len(), passes(&path).len() - 1);
        }

        /// The position of a workstream never passes its path, and the passes always rebuild the path.
        #[test]
        fn position_stays_on_the_path(
            path in valid_path(),
            passes_started in 0usize..5,
            deepest in proptest::option::of(1usize..4),
        ) {
            let pos = position(&path, Progress { passes_started, deepest: deepest.map(tier) });
            proptest::prop_assert!(pos < path.len());
            let rebuilt: Vec<Tier> = passes(&path).concat();
            proptest::prop_assert_eq!(&rebuilt[..], &path[..path.len() - 1]);
        }
    }
}
