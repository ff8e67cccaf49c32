//! T2 conflict cycles: a conflict the synthesis cannot resolve goes back to the specialists in it, each with
//! the other side's position; left after `retry.t2_conflict_cycles` cycles it goes to T1, which rules, and
//! the next synthesis applies the ruling; T1 validates the canonical architecture before any squad; a cycle
//! half sent before a crash is finished, not sent again. Which step a synthesis's conflicts lead to (a
//! conflict resolved within the cycles never reaches T1) and what each side is told is decided in
//! `agency_flow::conflicts` and tested there (crates/flow/tests/conflicts.rs).

use agency_core::tiers::BriefRole;
use agency_core::{BriefStatus, Tier};
use agency_engine::engine::feedback_name;

use crate::support::{Project, config};

fn tags(project: &Project, run: agency_core::RunId) -> Vec<String> {
    project.log_tags(run)
}

#[tokio::test]
async fn a_t2_conflict_left_after_the_cycle_limit_goes_to_t1_whose_ruling_the_synthesis_applies() {
    let project = Project::new();
    let mut config = config();
    config.retry.t2_conflict_cycles = 1;
    let (run, outcome) = project
        .succeed(include_str!("../scripts/conflict-t1.yaml"), config)
        .await;
    project.assert_fixed(&outcome.branch.unwrap(), &["add.sh", "mul.sh", "neg.sh"]);
    let briefs = project.briefs(run.id);
    let syntheses: Vec<_> = briefs
        .iter()
        .filter(|b| BriefRole::of(b) == BriefRole::Synthesis)
        .collect();
    // One cycle (the configured limit), then T1, then the synthesis that applies the ruling.
    assert_eq!(syntheses.len(), 3, "{}", project.tree(run.id));
    let arbiter = briefs
        .iter()
        .find(|b| BriefRole::of(b) == BriefRole::Arbiter)
        .unwrap_or_else(|| panic!("T1 was asked:\n{}", project.tree(run.id)));
    assert_eq!(arbiter.tier, Tier::T1);
    assert_eq!(arbiter.status, BriefStatus::Done);
    // T1's brief has both positions and the goal anchor.
    assert!(
        arbiter
            .instructions
            .contains("arithmetic documents every operator in NOTES.md")
    );
    assert!(arbiter.instructions.contains("NOTES.md is about neg.sh only"));
    assert!(
        arbiter.instructions.contains(crate::support::GOAL),
        "{}",
        arbiter.instructions
    );
    // The cycle first: both sides asked again, each told the other's position, and the synthesis after it
    // waited for both revisions.
    let of = |title: &str| -> Vec<_> {
        briefs
            .iter()
            .filter(|b| b.tier == Tier::T2 && b.title == title)
            .collect()
    };
    for (me, other, theirs) in [
        ("arithmetic", "sign", "NOTES.md is about neg.sh only"),
        (
            "sign",
            "arithmetic",
            "arithmetic documents every operator in NOTES.md",
        ),
    ] {
        let attempts = of(me);
        assert_eq!(attempts.len(), 2, "{}", project.tree(run.id));
        assert_eq!(attempts[0].status, BriefStatus::Cancelled);
        let told = project.artifact(run.id, &feedback_name(attempts[1].id)).unwrap();
        assert!(told.contains("Conflict cycle 1 of at most 1"), "{told}");
        assert!(told.contains(&format!("{other}'s position: {theirs}")), "{told}");
    }
    let revised: Vec<_> = [of("arithmetic")[1].id, of("sign")[1].id].into();
    assert_eq!(syntheses[1].depends_on, revised);
    assert_eq!(syntheses[2].depends_on, [arbiter.id]);
    // Each squad still hangs under its own (newest) specialist.
    let squad = briefs.iter().find(|b| b.title == "squad-sign").unwrap();
    assert_eq!(squad.parent, Some(of("sign")[1].id));
    assert!(syntheses[2].inputs.contains(&"ruling/ws-calc".to_string()));
    let ruling = project.artifact(run.id, "ruling/ws-calc").unwrap();
    assert!(ruling.contains("sign writes NOTES.md"), "{ruling}");
    let tags = tags(&project, run.id);
    assert_eq!(
        tags.iter().filter(|t| *t == "T2 CONFLICT_CYCLE").count(),
        1,
        "{tags:?}"
    );
    assert!(tags.iter().any(|t| t == "T1 CONFLICT_TO_T1"), "{tags:?}");
    assert!(tags.iter().any(|t| t == "T1 RULED"), "{tags:?}");
}

#[tokio::test]
async fn t1_validates_the_canonical_architecture_before_any_squad_and_an_invalid_one_goes_back() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/invalid-architecture.yaml"), config())
        .await;
    project.assert_fixed(&outcome.branch.unwrap(), &["add.sh", "mul.sh", "neg.sh"]);
    let briefs = project.briefs(run.id);
    let syntheses: Vec<_> = briefs
        .iter()
        .filter(|b| BriefRole::of(b) == BriefRole::Synthesis)
        .collect();
    assert_eq!(syntheses.len(), 2, "{}", project.tree(run.id));
    assert_eq!(syntheses[0].status, BriefStatus::Failed);
    let told = project.artifact(run.id, &feedback_name(syntheses[1].id)).unwrap();
    assert!(
        told.contains("ARCH_PROBLEM: the architecture never says neg.sh"),
        "{told}"
    );
    // Each synthesis had its own check; no squad was written under the invalid one's specialists before
    // the valid one.
    let checks: Vec<_> = briefs
        .iter()
        .filter(|b| BriefRole::of(b) == BriefRole::Validator)
        .collect();
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0].parent, Some(syntheses[0].id));
    assert_eq!(checks[1].parent, Some(syntheses[1].id));
    let first_squad = briefs
        .iter()
        .filter(|b| b.tier == Tier::T3)
        .map(|b| b.created_at)
        .min()
        .unwrap();
    assert!(first_squad > checks[1].created_at, "{}", project.tree(run.id));
    let tags = tags(&project, run.id);
    let at = |tag: &str| {
        tags.iter()
            .position(|t| t == tag)
            .unwrap_or_else(|| panic!("{tag}: {tags:?}"))
    };
    assert!(at("T1 ARCH_INVALID") < at("T1 ARCH_VALID"), "{tags:?}");
    assert!(at("T1 ARCH_VALID") < at("T3 START"), "{tags:?}");
}

/// T2 agents whose revision (a later attempt) never finishes: the run holds still after a cycle is sent.
#[derive(Debug)]
struct RevisionsHang {
    inner: std::sync::Arc<dyn agency_exec::runtime::Runtime>,
    stuck: crate::support::Stuck,
}

impl agency_exec::runtime::Runtime for RevisionsHang {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn run<'a>(
        &'a self,
        task: &'a agency_exec::runtime::AgentTask,
        link: &'a dyn agency_exec::runtime::RunnerLink,
        cancel: &'a agency_llm::CancelToken,
    ) -> agency_llm::BoxFuture<
        'a,
        Result<agency_exec::runtime::AgentOutcome, agency_exec::runtime::RuntimeError>,
    > {
        if task.brief.attempt > 0 {
            self.stuck.run(task, link, cancel)
        } else {
            self.inner.run(task, link, cancel)
        }
    }
}

/// A runner that stopped between a conflict cycle's record and its next synthesis (the record names the
/// synthesis attempt, the specialists are asked again, the synthesis is still `verifying`) finishes that
/// cycle on restart: the specialists are not asked a second time and no second cycle starts.
#[tokio::test]
async fn a_conflict_cycle_half_sent_before_a_crash_is_finished_not_sent_again() {
    use agency_core::event::payload::BriefStatusChange;
    use agency_core::event::{EventPayload, NewEvent};
    use agency_store::Blackboard;

    let project = Project::new();
    let script = include_str!("../scripts/conflict-cycle.yaml");
    let engine = project.runner(script, config(), true, "test-runner", |tier, builtin| {
        if tier == Tier::T2 {
            std::sync::Arc::new(RevisionsHang {
                inner: builtin,
                stuck: crate::support::Stuck::default(),
            })
        } else {
            builtin
        }
    });
    let run = engine.start(crate::support::GOAL).unwrap();
    let driving = crate::support::Background::drive(engine, run.id);
    let store = project.store.clone();
    let t2 = |title: &str| -> Vec<agency_core::Brief> {
        project
            .briefs(run.id)
            .into_iter()
            .filter(|b| b.tier == Tier::T2 && b.title == title)
            .collect()
    };
    crate::support::wait_for("the cycle sent", || {
        (t2("synthesis").len() == 2 && t2("arithmetic").len() == 2 && t2("sign").len() == 2).then_some(())
    });
    driving.stop();

    // The half-done state: the cycle's synthesis never got its next attempt written.
    let syntheses = t2("synthesis");
    let status = |why: &str| {
        NewEvent::typed(
            run.id,
            EventPayload::BriefStatus(BriefStatusChange::because(why.to_string())),
        )
    };
    store
        .update_brief_status(
            syntheses[1].id,
            syntheses[1].status,
            BriefStatus::Cancelled,
            status("test"),
        )
        .unwrap();
    store
        .update_brief_status(
            syntheses[0].id,
            BriefStatus::Cancelled,
            BriefStatus::Verifying,
            status("test"),
        )
        .unwrap();

    let engine = project.runner(script, config(), true, "test-runner", |_, builtin| builtin);
    agency_engine::advance::advance(&engine, run.id).await.unwrap();

    for title in ["arithmetic", "sign"] {
        assert_eq!(
            t2(title).len(),
            2,
            "{title} asked once:\n{}",
            project.tree(run.id)
        );
    }
    let cycles = project
        .events_of(run.id, agency_core::event::EventKind::Log)
        .into_iter()
        .filter(|e| e.payload["tag"] == "CONFLICT_CYCLE")
        .count();
    assert_eq!(cycles, 1, "{}", project.tree(run.id));
    // The synthesis is asked again, waiting on the revisions already asked for.
    let syntheses = t2("synthesis");
    let next = syntheses.last().unwrap();
    assert_eq!(next.status, BriefStatus::Pending, "{}", project.tree(run.id));
    let revising: Vec<_> = [t2("arithmetic")[1].id, t2("sign")[1].id].into();
    assert_eq!(next.depends_on, revising);
}
