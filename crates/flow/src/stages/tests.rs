//! The stage walk with plain values: unit tests of each step, and a property test over generated runs
//! (1–32 workstreams in up to 6 stages, readiness arriving in any order, merges that conflict and come
//! back, runners that restart) of the walk's promises: a ready workstream is merged eventually and never
//! twice, stages start in sequence, and every pass either acts or names what it waits for.

use std::collections::HashSet;

use proptest::prelude::*;

use super::*;

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn two_stages() -> StageProgress {
    StageProgress::of_stages(vec![ids(&["ws-c", "ws-a", "ws-b"]), ids(&["ws-d"])])
}

#[test]
fn touched_workstreams_come_in_their_stage_order_and_a_stage_is_merged_when_all_of_it_is() {
    let mut progress = two_stages();
    let touched: HashSet<String> = ["ws-b", "ws-d", "ws-c", "elsewhere"].map(String::from).into();
    assert_eq!(progress.touched_in(0, &touched), ["ws-c", "ws-b"]);
    assert_eq!(progress.touched_in(1, &touched), ["ws-d"]);

    assert!(!progress.learned(0));
    progress.set_learned(0);
    assert!(progress.learned(0) && !progress.learned(1) && !progress.learned(7));

    for ws in ["ws-a", "ws-c", "ws-a"] {
        progress.mark_merged(ws);
    }
    assert!(
        !progress.stage_merged(0),
        "two of three, one of them marked twice"
    );
    assert_eq!(progress.unmerged(0), ["ws-b"]);
    progress.mark_merged("ws-b");
    assert!(progress.stage_merged(0));
    assert!(!progress.stage_merged(1));
    progress.mark_merged("ws-d");
    assert!(progress.stage_merged(1));
}

#[test]
fn a_first_pass_finds_nothing_started_and_starts_the_first_stage() {
    let progress = two_stages();
    let mut walk = progress.walk(None);
    assert_eq!(walk.next(&progress), StageStep::FindStarted { stage: 0 });
    assert_eq!(
        walk.next(&progress),
        StageStep::Start {
            stage: 0,
            workstreams: ids(&["ws-c", "ws-a", "ws-b"])
        }
    );
    assert_eq!(walk.next(&progress), StageStep::Wait { stage: 0 }, "ended");
}

#[test]
fn a_pass_examines_only_what_changed_and_keeps_what_it_did_not_reach() {
    let mut progress = two_stages();
    for ws in ["ws-c", "ws-a", "ws-b"] {
        progress.mark_started(ws);
    }
    progress.set_learned(0);
    let touched: HashSet<String> = ["ws-b", "ws-d", "plan"].map(String::from).into();
    let mut walk = progress.walk(Some(touched));
    assert_eq!(
        walk.next(&progress),
        StageStep::Examine {
            workstream: "ws-b".into()
        }
    );
    assert_eq!(walk.next(&progress), StageStep::Wait { stage: 0 });
    let left = walk.into_unexamined().unwrap();
    assert_eq!(
        left,
        HashSet::from(["ws-d".to_string()]),
        "the plan's own brief is nobody's"
    );
}

#[test]
fn a_resumed_runner_learns_the_merges_once_then_starts_the_next_stage() {
    let mut progress = two_stages();
    for ws in ["ws-c", "ws-a", "ws-b"] {
        progress.mark_started(ws);
    }
    let mut walk = progress.walk(None);
    assert_eq!(
        walk.next(&progress),
        StageStep::LearnMerged {
            stage: 0,
            workstreams: ids(&["ws-c", "ws-a", "ws-b"])
        }
    );
    for ws in ["ws-c", "ws-a", "ws-b"] {
        progress.mark_merged(ws);
    }
    progress.set_learned(0);
    assert_eq!(walk.next(&progress), StageStep::FindStarted { stage: 1 });
    assert_eq!(
        walk.next(&progress),
        StageStep::Start {
            stage: 1,
            workstreams: ids(&["ws-d"])
        }
    );
}

#[test]
fn after_the_last_stage_merged_the_walk_says_so() {
    let mut progress = two_stages();
    for ws in ["ws-c", "ws-a", "ws-b", "ws-d"] {
        progress.mark_started(ws);
        progress.mark_merged(ws);
    }
    progress.set_learned(0);
    progress.set_learned(1);
    let mut walk = progress.walk(Some(HashSet::new()));
    assert_eq!(walk.next(&progress), StageStep::AllMerged);
    assert_eq!(walk.next(&progress), StageStep::AllMerged);
}

/// What happens in a generated run between passes.
#[derive(Debug, Clone)]
enum Op {
    /// The joint verdict of this workstream's slices passed (if it has started): it is ready to merge.
    Ready(usize),
    /// This workstream's next merge into the integration branch conflicts: it escalates, and is ready
    /// again only after a later `Ready`.
    Conflict(usize),
    /// The runner makes a pass.
    Pass,
    /// The runner stops and another takes over: it knows nothing and looks at everything once.
    Restart,
}

/// The world the walk acts on: what is on the blackboard.
struct World {
    stages: Vec<Vec<String>>,
    started: HashSet<String>,
    ready: HashSet<String>,
    conflicts: HashSet<String>,
    merged: HashSet<String>,
    /// Workstreams whose briefs have events since the runner's last pass.
    touched: HashSet<String>,
    /// Each merge made, in order: a workstream merged twice is a failure.
    merges: Vec<String>,
}

/// The runner's side: its progress and what its passes carry over.
struct Runner {
    progress: StageProgress,
    unexamined: HashSet<String>,
    first: bool,
}

impl Runner {
    fn new(stages: &[Vec<String>]) -> Self {
        Runner {
            progress: StageProgress::of_stages(stages.to_vec()),
            unexamined: HashSet::new(),
            first: true,
        }
    }

    /// One pass, carried out the way the engine does. Returns the step that ended it.
    fn pass(&mut self, world: &mut World) -> Result<StageStep, TestCaseError> {
        let touched = if self.first {
            world.touched.clear();
            None
        } else {
            let mut t: HashSet<String> = world.touched.drain().collect();
            t.extend(self.unexamined.drain());
            Some(t)
        };
        self.first = false;
        let mut walk = self.progress.walk(touched);
        let limit = 4 * world.started.len() + 4 * world.stages.len() + 16;
        let mut ended = None;
        for _ in 0..limit {
            match walk.next(&self.progress) {
                StageStep::FindStarted { .. } => {
                    for ws in &world.started {
                        self.progress.mark_started(ws);
                    }
                }
                StageStep::Start { stage, workstreams } => {
                    for earlier in &world.stages[..stage] {
                        prop_assert!(
                            earlier.iter().all(|ws| world.merged.contains(ws)),
                            "stage {stage} started before the one before it merged"
                        );
                    }
                    for ws in &workstreams {
                        prop_assert!(world.started.insert(ws.clone()), "{ws} started twice");
                        world.touched.insert(ws.clone());
                        self.progress.mark_started(ws);
                    }
                    ended = Some(StageStep::Start { stage, workstreams });
                    break;
                }
                StageStep::LearnMerged { stage, workstreams } => {
                    for ws in workstreams.iter().filter(|ws| world.merged.contains(*ws)) {
                        self.progress.mark_merged(ws);
                    }
                    self.progress.set_learned(stage);
                }
                StageStep::Examine { workstream } => {
                    prop_assert!(
                        world.started.contains(&workstream),
                        "{workstream} examined unstarted"
                    );
                    if !world.ready.contains(&workstream) {
                        continue;
                    }
                    if world.conflicts.remove(&workstream) {
                        // Escalated: its slice waits at a gate, an event on its briefs.
                        world.ready.remove(&workstream);
                        world.touched.insert(workstream);
                        continue;
                    }
                    prop_assert!(!world.merged.contains(&workstream), "{workstream} merged twice");
                    world.merged.insert(workstream.clone());
                    world.merges.push(workstream.clone());
                    self.progress.mark_merged(&workstream);
                }
                StageStep::Wait { stage } => {
                    prop_assert!(
                        !self.progress.unmerged(stage).is_empty(),
                        "a wait that names nothing to wait for"
                    );
                    ended = Some(StageStep::Wait { stage });
                    break;
                }
                StageStep::AllMerged => {
                    let all: usize = world.stages.iter().map(Vec::len).sum();
                    prop_assert_eq!(world.merged.len(), all);
                    ended = Some(StageStep::AllMerged);
                    break;
                }
            }
        }
        self.unexamined = walk.into_unexamined().unwrap_or_default();
        ended.ok_or_else(|| TestCaseError::fail("a pass that never ended"))
    }
}

/// 1–32 workstreams split into 1–6 non-empty stages.
fn stages() -> impl Strategy<Value = Vec<Vec<String>>> {
    (1usize..=32)
        .prop_flat_map(|n| (Just(n), proptest::collection::vec(any::<bool>(), n)))
        .prop_map(|(n, cuts)| {
            let mut stages: Vec<Vec<String>> = vec![Vec::new()];
            for (i, cut) in cuts.into_iter().enumerate().take(n) {
                if cut && i > 0 && stages.len() < 6 {
                    stages.push(Vec::new());
                }
                if let Some(last) = stages.last_mut() {
                    last.push(format!("ws-{i}"));
                }
            }
            stages
        })
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(
        prop_oneof![
            4 => (0usize..32).prop_map(Op::Ready),
            1 => (0usize..32).prop_map(Op::Conflict),
            4 => Just(Op::Pass),
            1 => Just(Op::Restart),
        ],
        0..120,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_ready_workstream_merges_once_and_the_run_reaches_its_acceptance(
        stages in stages(),
        ops in ops(),
    ) {
        let all: Vec<String> = stages.iter().flatten().cloned().collect();
        let mut world = World {
            stages: stages.clone(),
            started: HashSet::new(),
            ready: HashSet::new(),
            conflicts: HashSet::new(),
            merged: HashSet::new(),
            touched: HashSet::new(),
            merges: Vec::new(),
        };
        let mut runner = Runner::new(&stages);
        for op in ops {
            match op {
                Op::Ready(i) => {
                    let ws = &all[i % all.len()];
                    if world.started.contains(ws) && !world.merged.contains(ws) && world.ready.insert(ws.clone()) {
                        world.touched.insert(ws.clone());
                    }
                }
                Op::Conflict(i) => {
                    world.conflicts.insert(all[i % all.len()].clone());
                }
                Op::Pass => {
                    runner.pass(&mut world)?;
                }
                Op::Restart => runner = Runner::new(&stages),
            }
        }
        // From here on nothing conflicts, and every started workstream becomes ready as its stage starts:
        // the run must reach its acceptance, each workstream merged exactly once. A workstream that was
        // ready before gets no new event here: a walk that forgot a change it examined without merging
        // (a merge it skipped) would never merge it.
        world.conflicts.clear();
        let mut end = None;
        for _ in 0..(3 * stages.len() + 4) {
            for ws in &world.started {
                if !world.merged.contains(ws) && world.ready.insert(ws.clone()) {
                    world.touched.insert(ws.clone());
                }
            }
            let step = runner.pass(&mut world)?;
            if step == StageStep::AllMerged {
                end = Some(step);
                break;
            }
        }
        prop_assert_eq!(end, Some(StageStep::AllMerged), "stuck: merged {:?}", world.merges);
        let unique: HashSet<&String> = world.merges.iter().collect();
        prop_assert_eq!(unique.len(), world.merges.len());
        prop_assert_eq!(world.merges.len(), all.len());
    }
}
