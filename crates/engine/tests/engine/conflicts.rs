//! T2 conflict cycles: a conflict the synthesis cannot resolve goes back to the specialists in it, each with
//! the other side's position; resolved within `retry.t2_conflict_cycles` cycles it never reaches T1, else T1
//! rules and the next synthesis applies the ruling. The run goes on to its squads either way.

use agency_core::tiers::BriefRole;
use agency_core::{BriefStatus, Tier};
use agency_engine::engine::feedback_name;

use crate::support::{Project, config};

fn tags(project: &Project, run: agency_core::RunId) -> Vec<String> {
    project.log_tags(run)
}

#[tokio::test]
async fn a_t2_conflict_resolved_in_one_cycle_never_reaches_t1() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/conflict-cycle.yaml"), config())
        .await;
    project.assert_fixed(&outcome.branch.unwrap(), &["add.sh", "mul.sh", "neg.sh"]);
    let briefs = project.briefs(run.id);
    let of = |title: &str| -> Vec<_> {
        briefs
            .iter()
            .filter(|b| b.tier == Tier::T2 && b.title == title)
            .collect()
    };
    // Both sides were asked again once, each told the other's position.
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
        assert!(told.contains("Conflict cycle 1 of at most 2"), "{told}");
        assert!(told.contains(&format!("{other}'s position: {theirs}")), "{told}");
    }
    let syntheses = of("synthesis");
    assert_eq!(syntheses.len(), 2, "{}", project.tree(run.id));
    assert_eq!(syntheses[1].status, BriefStatus::Done);
    // The second synthesis waited for both revisions.
    let revised: Vec<_> = [of("arithmetic")[1].id, of("sign")[1].id].into();
    assert_eq!(syntheses[1].depends_on, revised);
    assert!(briefs.iter().all(|b| BriefRole::of(b) != BriefRole::Arbiter));
    let tags = tags(&project, run.id);
    assert_eq!(
        tags.iter().filter(|t| *t == "T2 CONFLICT_CYCLE").count(),
        1,
        "{tags:?}"
    );
    assert!(!tags.iter().any(|t| t == "T1 CONFLICT_TO_T1"), "{tags:?}");
    // Each squad still hangs under its own (newest) specialist.
    let squad = briefs.iter().find(|b| b.title == "squad-sign").unwrap();
    assert_eq!(squad.parent, Some(of("sign")[1].id));
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
    assert_eq!(syntheses[2].depends_on, [arbiter.id]);
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
