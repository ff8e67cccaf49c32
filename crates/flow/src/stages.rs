//! The plan's stages: its parallel groups, in the plan's sequence. A stage starts when the one before it
//! has merged every workstream into the integration branch; a workstream merges once the joint verdict of
//! its slices passed; after the last stage, T1 accepts or rejects the result.
//!
//! [`StageProgress`] is what the runner knows of an approved plan's stages: which workstreams started and
//! which merged, both of which only grow while the plan holds. Every pass walks the stages with a
//! [`StageWalk`], which says one [`StageStep`] at a time what to do or to find out; the engine carries it
//! out and tells the progress what it learned or did. The walk looks only at the workstreams whose briefs
//! changed (`touched`), so a pass costs what changed, not the size of the plan — and a touched workstream
//! is forgotten only once it was examined, so an incremental pass never loses one that is ready.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use agency_core::{Brief, Plan};

/// The newest T1 plan brief that was approved, its plan, and what the runner knows of its stages.
#[derive(Debug)]
pub struct ApprovedPlan {
    /// The plan brief (status `done`): every workstream's entry brief is its child.
    pub brief: Brief,
    /// Its validated plan.
    pub plan: Plan,
    /// What the runner already knows of its stages: never forgotten while this plan holds.
    pub stages: Mutex<StageProgress>,
}

impl ApprovedPlan {
    /// `plan`, approved with `brief`, with nothing known yet of its stages.
    pub fn new(brief: Brief, plan: Plan) -> Self {
        ApprovedPlan {
            stages: Mutex::new(StageProgress::new(&plan)),
            brief,
            plan,
        }
    }
}

/// What the runner knows of an approved plan's stages: which workstreams started and which merged.
#[derive(Debug, Clone)]
pub struct StageProgress {
    started: HashSet<String>,
    merged: HashSet<String>,
    /// Each workstream's stage (its place in the plan's sequence) and its place in that stage.
    places: HashMap<String, (usize, usize)>,
    /// Each stage's workstreams, in the plan's order.
    lists: Vec<Vec<String>>,
    /// What is counted of each stage, in the plan's sequence.
    stages: Vec<StageCount>,
}

/// One stage's workstreams: how many there are, how many of them are in `merged`, and whether its merges
/// were read from the blackboard (after that, `merged` is complete for it).
#[derive(Debug, Clone, Copy, Default)]
struct StageCount {
    size: usize,
    merged: usize,
    learned: bool,
}

impl StageProgress {
    /// Nothing known yet of `plan`'s stages.
    pub fn new(plan: &Plan) -> Self {
        let lists: Vec<Vec<String>> = plan
            .stages()
            .iter()
            .map(|stage| stage.workstreams.to_vec())
            .collect();
        Self::of_stages(lists)
    }

    /// Nothing known yet of the stages `lists` (each stage's workstreams, in order).
    pub fn of_stages(lists: Vec<Vec<String>>) -> Self {
        let mut places = HashMap::new();
        for (stage, workstreams) in lists.iter().enumerate() {
            for (place, id) in workstreams.iter().enumerate() {
                places.entry(id.clone()).or_insert((stage, place));
            }
        }
        let mut stages = vec![StageCount::default(); lists.len()];
        for (stage, _) in places.values() {
            stages[*stage].size += 1;
        }
        StageProgress {
            started: HashSet::new(),
            merged: HashSet::new(),
            places,
            lists,
            stages,
        }
    }

    /// Whether `workstream` is one of the plan's.
    pub fn knows(&self, workstream: &str) -> bool {
        self.places.contains_key(workstream)
    }

    /// `workstream` has started under this plan (its entry brief is a child of the plan brief).
    pub fn mark_started(&mut self, workstream: &str) {
        if !self.started.contains(workstream) {
            self.started.insert(workstream.to_string());
        }
    }

    /// Whether any workstream of `stage` is known to have started.
    pub fn stage_started(&self, stage: usize) -> bool {
        self.lists
            .get(stage)
            .is_some_and(|ids| ids.iter().any(|id| self.started.contains(id)))
    }

    /// `workstream` is merged into the integration branch.
    pub fn mark_merged(&mut self, workstream: &str) {
        if self.merged.insert(workstream.to_string())
            && let Some((stage, _)) = self.places.get(workstream)
        {
            self.stages[*stage].merged += 1;
        }
    }

    /// Whether `workstream` is known to be merged.
    pub fn is_merged(&self, workstream: &str) -> bool {
        self.merged.contains(workstream)
    }

    /// Whether `stage`'s merges were read from the blackboard.
    pub fn learned(&self, stage: usize) -> bool {
        self.stages.get(stage).is_some_and(|s| s.learned)
    }

    /// `stage`'s merges were read from the blackboard: from now on only this runner merges.
    pub fn set_learned(&mut self, stage: usize) {
        if let Some(count) = self.stages.get_mut(stage) {
            count.learned = true;
        }
    }

    /// Whether every workstream of `stage` is merged (a stage past the plan's end is).
    pub fn stage_merged(&self, stage: usize) -> bool {
        self.stages.get(stage).is_none_or(|s| s.merged == s.size)
    }

    /// The workstreams of `stage` not merged yet, in the stage's order: what a stage that holds the run
    /// waits for. Built on request (a stage may list a thousand), never on a pass.
    pub fn unmerged(&self, stage: usize) -> Vec<&str> {
        self.lists
            .get(stage)
            .into_iter()
            .flatten()
            .filter(|id| !self.merged.contains(*id))
            .map(String::as_str)
            .collect()
    }

    /// How many stages the plan has.
    pub fn stage_count(&self) -> usize {
        self.lists.len()
    }

    /// The workstreams of `stage` among `touched`, in the stage's order.
    pub fn touched_in<'t>(&self, stage: usize, touched: &'t HashSet<String>) -> Vec<&'t str> {
        let mut found: Vec<(usize, &str)> = touched
            .iter()
            .filter_map(|id| match self.places.get(id) {
                Some((s, place)) if *s == stage => Some((*place, id.as_str())),
                _ => None,
            })
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, id)| id).collect()
    }

    /// A walk over the stages for one pass. `touched` holds the workstreams whose briefs changed since
    /// they were last examined (`None`: any may have, as on a runner's first pass).
    pub fn walk(&self, touched: Option<HashSet<String>>) -> StageWalk {
        // Briefs outside the plan's workstreams (the plan's own, a superseded plan's) wait for nothing here.
        let touched = touched.map(|mut t| {
            t.retain(|id| self.knows(id));
            t
        });
        StageWalk {
            stage: 0,
            phase: Phase::Enter,
            touched,
            asked: Vec::new(),
        }
    }
}

/// What a pass does next in its walk over the stages (see [`StageWalk::next`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageStep {
    /// Nothing of `stage` is known to have started: read which workstreams the plan brief's children
    /// started ([`StageProgress::mark_started`] each), then ask again.
    FindStarted { stage: usize },
    /// No workstream of `stage` started: write their entry briefs. The pass ends here.
    Start { stage: usize, workstreams: Vec<String> },
    /// What of `stage` merged before this runner knew the plan is not known: read the merges of these
    /// workstreams from the blackboard ([`StageProgress::mark_merged`] each, then
    /// [`StageProgress::set_learned`]).
    LearnMerged { stage: usize, workstreams: Vec<String> },
    /// `workstream` changed and is not merged: merge it if its slices were all accepted
    /// ([`StageProgress::mark_merged`] once it is in the integration branch).
    Examine { workstream: String },
    /// `stage` is not merged whole: the run waits for [`StageProgress::unmerged`] of it. The pass ends here.
    Wait { stage: usize },
    /// Every stage merged: T1's acceptance is next ([`crate::tiers::after_all_merged`]). The pass ends here.
    AllMerged,
}

/// Where a [`StageWalk`] is in its current stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not yet asked whether the stage started.
    Enter,
    /// Asked once, after [`StageStep::FindStarted`].
    Looked,
    /// Started; its merges are being learned or its workstreams examined.
    Examining,
    /// The walk ended (a start, a wait, or all merged).
    Ended,
}

/// One pass's walk over the stages: a state machine the engine turns with [`StageWalk::next`], telling the
/// [`StageProgress`] what it finds and does between steps.
#[derive(Debug)]
pub struct StageWalk {
    stage: usize,
    phase: Phase,
    touched: Option<HashSet<String>>,
    /// The workstreams of the current stage still to examine, in reverse order (popped from the end).
    asked: Vec<String>,
}

impl StageWalk {
    /// The next step, given what the runner knows now. After [`StageStep::Start`], [`StageStep::Wait`] or
    /// [`StageStep::AllMerged`] the walk has ended and says so again.
    pub fn next(&mut self, progress: &StageProgress) -> StageStep {
        loop {
            if self.phase == Phase::Ended {
                return self.ended(progress);
            }
            if self.stage >= progress.stage_count() {
                self.phase = Phase::Ended;
                return StageStep::AllMerged;
            }
            let stage = self.stage;
            match self.phase {
                Phase::Enter | Phase::Looked if progress.stage_started(stage) => {
                    self.phase = Phase::Examining;
                    self.asked = self.asked_of(progress, stage);
                }
                Phase::Enter => {
                    self.phase = Phase::Looked;
                    return StageStep::FindStarted { stage };
                }
                Phase::Looked => {
                    self.phase = Phase::Ended;
                    return StageStep::Start {
                        stage,
                        workstreams: progress.lists[stage].clone(),
                    };
                }
                Phase::Examining if !progress.learned(stage) => {
                    return StageStep::LearnMerged {
                        stage,
                        workstreams: progress.lists[stage].clone(),
                    };
                }
                Phase::Examining => {
                    while let Some(id) = self.asked.pop() {
                        if let Some(t) = self.touched.as_mut() {
                            t.remove(&id);
                        }
                        if !progress.is_merged(&id) {
                            return StageStep::Examine { workstream: id };
                        }
                    }
                    if !progress.stage_merged(stage) {
                        self.phase = Phase::Ended;
                        return StageStep::Wait { stage };
                    }
                    self.stage += 1;
                    self.phase = Phase::Enter;
                }
                Phase::Ended => {}
            }
        }
    }

    /// What an ended walk says again.
    fn ended(&self, progress: &StageProgress) -> StageStep {
        if self.stage >= progress.stage_count() {
            StageStep::AllMerged
        } else {
            StageStep::Wait { stage: self.stage }
        }
    }

    /// The workstreams of `stage` a pass examines: those touched, or all of them on a first pass.
    fn asked_of(&self, progress: &StageProgress, stage: usize) -> Vec<String> {
        let mut asked: Vec<String> = match &self.touched {
            Some(t) => progress
                .touched_in(stage, t)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            None => progress.lists[stage].clone(),
        };
        asked.reverse();
        asked
    }

    /// The touched workstreams this walk did not examine (their stage was not reached): the next pass
    /// gets them with what it finds touched, so none is lost. `None` when the walk was given `None`.
    pub fn into_unexamined(self) -> Option<HashSet<String>> {
        self.touched
    }
}

#[cfg(test)]
mod tests;
