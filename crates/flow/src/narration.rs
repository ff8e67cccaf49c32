//! The tier-level lines of the live log (seed 001, "Human-Readable Live Log") that say a tier's agents
//! started or its work is ready: `SPEC_START`, `START`, `MESH_START`, `SWARM_START`, `SPEC_DONE`,
//! `MESH_DONE`, `VERIFY_START`. What each says is decided here from the briefs involved; the engine
//! (`crates/engine/src/narrate.rs`) writes them, once, at the step that makes them true.

use agency_core::tiers::BriefRole;
use agency_core::{Brief, Tier};

/// One line of the live log: the tier it is about, its tag and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub tier: Tier,
    pub tag: &'static str,
    pub message: String,
}

impl Line {
    fn new(tier: Tier, tag: &'static str, message: String) -> Line {
        Line { tier, tag, message }
    }
}

/// "1 worker" / "3 workers".
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The lines saying which agents start now that `parent` had `children` written: a lead's specialists
/// (`SPEC_START`), a specialist's squad leads negotiating as a mesh (`MESH_START`, more than one) or its
/// one squad lead (`START`), a squad lead's workers (`SWARM_START`, with those pipelined behind them).
/// Nothing for any other role.
pub fn children_started(parent: &Brief, children: &[Brief]) -> Vec<Line> {
    match BriefRole::of(parent) {
        BriefRole::Lead => {
            let names: Vec<&str> = children.iter().map(|c| c.title.as_str()).collect();
            vec![Line::new(
                Tier::T2,
                "SPEC_START",
                format!(
                    "{} spawned (parallel): {}",
                    count(children.len(), "specialist"),
                    names.join(", ")
                ),
            )]
        }
        BriefRole::Specialist if children.len() > 1 => vec![Line::new(
            Tier::T3,
            "MESH_START",
            format!(
                "{}/{}: {} negotiating task boundaries",
                parent.workstream,
                parent.title,
                count(children.len(), "squad lead")
            ),
        )],
        BriefRole::Specialist => children
            .iter()
            .map(|child| {
                Line::new(
                    Tier::T3,
                    "START",
                    format!("T3 {} spawned for {}", child.title, child.workstream),
                )
            })
            .collect(),
        BriefRole::SquadLead => {
            let pipeline = children.iter().filter(|c| !c.depends_on.is_empty()).count();
            let swarm = children.len() - pipeline;
            let started = match swarm {
                1 => "1 worker spawned".to_string(),
                n => format!("{n} workers spawned in parallel"),
            };
            let behind = match pipeline {
                0 => String::new(),
                n => format!(
                    ", {n} pipelined behind {}",
                    if swarm == 1 { "it" } else { "them" }
                ),
            };
            vec![Line::new(
                Tier::T4,
                "SWARM_START",
                format!("{}: {started}{behind}", parent.title),
            )]
        }
        _ => Vec::new(),
    }
}

/// A T2 specialist's architecture was accepted into the workstream.
pub fn specialist_done(brief: &Brief) -> Line {
    Line::new(
        Tier::T2,
        "SPEC_DONE",
        format!("{} architecture draft ready", brief.title),
    )
}

/// The squad leads of a mesh of `domain` in `workstream` committed their drafts in `round`: how many
/// leads, how many T4 tasks in all, of which `pipeline` wait on another.
pub fn mesh_done(
    workstream: &str,
    domain: &str,
    squad_leads: usize,
    tasks: usize,
    pipeline: usize,
    round: u32,
) -> Line {
    Line::new(
        Tier::T3,
        "MESH_DONE",
        format!(
            "{workstream}/{domain}: task split committed by {} in round {round} — {} ({} swarm, {pipeline} \
             pipeline)",
            count(squad_leads, "squad lead"),
            count(tasks, "T4 task"),
            tasks.saturating_sub(pipeline)
        ),
    )
}

/// `started` verifiers of `squad` began this round; no line when none did.
pub fn verifiers_started(squad: &str, started: usize) -> Option<Line> {
    (started > 0).then(|| {
        Line::new(
            Tier::T5,
            "VERIFY_START",
            format!("{squad}: {} spawned", count(started, "verifier")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempts::tests::brief;
    use agency_core::{BriefId, BriefStatus};

    fn child(tier: Tier, title: &str, depends: bool) -> Brief {
        let mut b = brief(tier, title, 0, BriefStatus::Pending);
        if depends {
            b.depends_on = vec![BriefId::new()];
        }
        b
    }

    #[test]
    fn a_lead_starts_its_specialists_in_one_line() {
        let lead = brief(Tier::T2, agency_core::tiers::LEAD_TITLE, 0, BriefStatus::Done);
        let lines = children_started(
            &lead,
            &[child(Tier::T2, "api", false), child(Tier::T2, "store", false)],
        );
        assert_eq!(
            lines,
            [Line::new(
                Tier::T2,
                "SPEC_START",
                "2 specialists spawned (parallel): api, store".into()
            )]
        );
        assert_eq!(
            children_started(&lead, &[child(Tier::T2, "api", false)])[0].message,
            "1 specialist spawned (parallel): api"
        );
    }

    #[test]
    fn a_specialist_starts_a_mesh_or_one_squad_lead() {
        let specialist = brief(Tier::T2, "api", 0, BriefStatus::Done);
        assert_eq!(BriefRole::of(&specialist), BriefRole::Specialist);
        let mesh = children_started(
            &specialist,
            &[child(Tier::T3, "a", false), child(Tier::T3, "b", false)],
        );
        assert_eq!(
            mesh,
            [Line::new(
                Tier::T3,
                "MESH_START",
                "ws/api: 2 squad leads negotiating task boundaries".into()
            )]
        );
        let one = children_started(&specialist, &[child(Tier::T3, "a", false)]);
        assert_eq!(one, [Line::new(Tier::T3, "START", "T3 a spawned for ws".into())]);
    }

    #[test]
    fn a_squad_lead_says_its_swarm_and_its_pipeline() {
        let lead = brief(Tier::T3, "squad", 0, BriefStatus::Done);
        let said = |children: &[Brief]| children_started(&lead, children)[0].message.clone();
        assert_eq!(said(&[child(Tier::T4, "a", false)]), "squad: 1 worker spawned");
        assert_eq!(
            said(&[child(Tier::T4, "a", false), child(Tier::T4, "b", false)]),
            "squad: 2 workers spawned in parallel"
        );
        assert_eq!(
            said(&[child(Tier::T4, "a", false), child(Tier::T4, "b", true)]),
            "squad: 1 worker spawned, 1 pipelined behind it"
        );
        assert_eq!(
            said(&[
                child(Tier::T4, "a", false),
                child(Tier::T4, "b", false),
                child(Tier::T4, "c", true),
                child(Tier::T4, "d", true),
            ]),
            "squad: 2 workers spawned in parallel, 2 pipelined behind them"
        );
    }

    #[test]
    fn other_roles_start_without_a_line() {
        let implementer = brief(Tier::T4, "a", 0, BriefStatus::Done);
        assert!(children_started(&implementer, &[child(Tier::T5, "a", false)]).is_empty());
    }

    #[test]
    fn the_done_lines_count_what_was_made() {
        let specialist = brief(Tier::T2, "api", 0, BriefStatus::Done);
        assert_eq!(
            specialist_done(&specialist),
            Line::new(Tier::T2, "SPEC_DONE", "api architecture draft ready".into())
        );
        assert_eq!(
            mesh_done("ws-a", "api", 2, 5, 2, 3).message,
            "ws-a/api: task split committed by 2 squad leads in round 3 — 5 T4 tasks (3 swarm, 2 pipeline)"
        );
        assert_eq!(
            mesh_done("ws-a", "api", 1, 1, 0, 1).message,
            "ws-a/api: task split committed by 1 squad lead in round 1 — 1 T4 task (1 swarm, 0 pipeline)"
        );
        assert_eq!(verifiers_started("squad", 0), None);
        assert_eq!(
            verifiers_started("squad", 3),
            Some(Line::new(
                Tier::T5,
                "VERIFY_START",
                "squad: 3 verifiers spawned".into()
            ))
        );
    }
}
