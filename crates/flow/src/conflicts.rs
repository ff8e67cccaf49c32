//! T2 conflict cycles (seed 001, T2 step 6): the lead's synthesis reads every specialist's proposal; each
//! conflict it cannot resolve goes back to the specialists in it, each told the other side's position, for
//! at most `retry.t2_conflict_cycles` cycles; what is left then goes to T1, whose ruling against the goal
//! anchor the next synthesis applies. A synthesis that still reports conflicts after T1 ruled goes to a
//! human. Only a synthesis without conflicts is the canonical architecture.

use agency_core::tiers::Conflict;

/// What a synthesis's conflicts lead to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictStep {
    /// No conflict: the synthesis is the canonical architecture (to its gate, then the squads).
    Canonical,
    /// Back to the specialists in a conflict, for cycle `cycle` (1-based).
    BackToSpecialists {
        /// The cycle they revise for.
        cycle: u32,
    },
    /// The cycles are spent: T1 rules on what is left.
    ToT1,
    /// T1 ruled and the synthesis still reports conflicts: a human decides.
    ToHuman,
}

/// What `conflicts` lead to after `cycles_run` cycles of at most `limit`, and whether T1 already ruled.
pub fn step(conflicts: usize, cycles_run: u32, limit: u32, t1_ruled: bool) -> ConflictStep {
    if conflicts == 0 {
        ConflictStep::Canonical
    } else if t1_ruled {
        ConflictStep::ToHuman
    } else if cycles_run < limit {
        ConflictStep::BackToSpecialists {
            cycle: cycles_run + 1,
        }
    } else {
        ConflictStep::ToT1
    }
}

/// [`step`] for a synthesis attempt that may have decided already: `decided_here` is whether the conflict
/// record names this very attempt (it is written first, before the cycle's re-invocations). Then the step
/// is the one recorded, again — `BackToSpecialists` for the cycle recorded, or `ToT1` once it ruled — so a
/// runner that stopped between the record and the rest finishes that step instead of starting another
/// cycle (or, after the record of T1's ruling, sending the synthesis to a human it never reached).
pub fn step_of(
    conflicts: usize,
    cycles_run: u32,
    limit: u32,
    t1_ruled: bool,
    decided_here: bool,
) -> ConflictStep {
    match (decided_here, conflicts) {
        (true, 1..) if t1_ruled => ConflictStep::ToT1,
        (true, 1..) => ConflictStep::BackToSpecialists { cycle: cycles_run },
        _ => step(conflicts, cycles_run, limit, t1_ruled),
    }
}

/// Problems with a synthesis's conflicts, given the lead's specialists' titles: each conflict needs an
/// `about` and at least two positions of distinct, known specialists. Each problem names the conflict.
pub fn problems(conflicts: &[Conflict], specialists: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, conflict) in conflicts.iter().enumerate() {
        let at = format!("unresolved_conflicts[{i}]");
        if conflict.about.trim().is_empty() {
            found.push(format!("{at}.about: must say what the conflict is about"));
        }
        let mut sides: Vec<&str> = conflict.positions.iter().map(|p| p.specialist.as_str()).collect();
        for side in &sides {
            if !specialists.contains(side) {
                found.push(format!(
                    "{at}.positions: \"{side}\" is not one of the specialists ({})",
                    specialists.join(", ")
                ));
            }
        }
        sides.sort();
        sides.dedup();
        if sides.len() < 2 {
            found.push(format!(
                "{at}.positions: a conflict needs the positions of at least two distinct specialists"
            ));
        }
    }
    found
}

/// What `specialist` is told about `conflicts` in cycle `cycle` of `limit`: each conflict it is in, with
/// its own position and every other side's. Empty when it is in none.
pub fn brief_for(specialist: &str, conflicts: &[Conflict], cycle: u32, limit: u32) -> Option<String> {
    let mine: Vec<String> = conflicts
        .iter()
        .filter(|c| c.positions.iter().any(|p| p.specialist == specialist))
        .map(|c| {
            let sides: Vec<String> = c
                .positions
                .iter()
                .map(|p| {
                    let who = if p.specialist == specialist {
                        "your position".to_string()
                    } else {
                        format!("{}'s position", p.specialist)
                    };
                    format!("  - {who}: {}", p.position)
                })
                .collect();
            format!("- {}\n{}", c.about, sides.join("\n"))
        })
        .collect();
    if mine.is_empty() {
        return None;
    }
    Some(format!(
        "Conflict cycle {cycle} of at most {limit}: the lead architect could not reconcile your architecture \
         with another specialist's.\n{}\nRevise your architecture so the conflict is resolved (adopt the \
         other position, or a third that serves both), or state precisely why yours must stand. Conflicts \
         left after the last cycle go to T1, who decides against the goal anchor.",
        mine.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agency_core::tiers::Position;

    fn conflict(about: &str, sides: &[(&str, &str)]) -> Conflict {
        Conflict {
            about: about.into(),
            positions: sides
                .iter()
                .map(|(s, p)| Position {
                    specialist: s.to_string(),
                    position: p.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn cycles_run_to_their_limit_then_t1_rules_then_a_human() {
        assert_eq!(step(0, 0, 2, false), ConflictStep::Canonical);
        assert_eq!(step(0, 2, 2, true), ConflictStep::Canonical);
        assert_eq!(step(1, 0, 2, false), ConflictStep::BackToSpecialists { cycle: 1 });
        assert_eq!(step(1, 1, 2, false), ConflictStep::BackToSpecialists { cycle: 2 });
        assert_eq!(step(1, 2, 2, false), ConflictStep::ToT1);
        assert_eq!(step(1, 0, 0, false), ConflictStep::ToT1, "no cycles configured");
        assert_eq!(step(1, 2, 2, true), ConflictStep::ToHuman);
    }

    #[test]
    fn each_side_is_told_the_other_position_and_bad_conflicts_are_named() {
        let c = conflict("the id format", &[("api", "uuid"), ("db", "serial integer")]);
        let told = brief_for("api", std::slice::from_ref(&c), 1, 2).unwrap();
        assert!(told.contains("your position: uuid"), "{told}");
        assert!(told.contains("db's position: serial integer"), "{told}");
        assert!(told.contains("Conflict cycle 1 of at most 2"), "{told}");
        assert!(brief_for("ui", std::slice::from_ref(&c), 1, 2).is_none());
        assert!(problems(&[c], &["api", "db"]).is_empty());
        let bad = problems(
            &[conflict(" ", &[("api", "x"), ("api", "y"), ("ghost", "z")])],
            &["api"],
        );
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].contains("about"), "{bad:?}");
        assert!(
            bad[1].contains("\"ghost\" is not one of the specialists (api)"),
            "{bad:?}"
        );
        let one_side = problems(&[conflict("x", &[("api", "a"), ("api", "b")])], &["api"]);
        assert!(one_side[0].contains("at least two distinct"), "{one_side:?}");
    }
}

#[cfg(test)]
mod replay_tests {
    use super::*;
    use proptest::prelude::*;

    /// The record a step leaves: (cycles run, T1 asked to rule).
    fn recorded(step: &ConflictStep, cycles_run: u32) -> Option<(u32, bool)> {
        match step {
            ConflictStep::BackToSpecialists { cycle } => Some((*cycle, false)),
            ConflictStep::ToT1 => Some((cycles_run, true)),
            ConflictStep::Canonical | ConflictStep::ToHuman => None,
        }
    }

    proptest! {
        /// Asked again after its record was written (a runner that stopped in between), the same synthesis
        /// attempt gets the same step back: a cycle is never sent twice, T1 never asked twice.
        #[test]
        fn a_decided_step_replays_as_itself(conflicts in 0usize..4, cycles in 0u32..4, limit in 0u32..4, ruled: bool) {
            let first = step_of(conflicts, cycles, limit, ruled, false);
            prop_assert_eq!(&first, &step(conflicts, cycles, limit, ruled));
            if let Some((cycles_after, ruled_after)) = recorded(&first, cycles) {
                prop_assert_eq!(step_of(conflicts, cycles_after, limit, ruled_after, true), first);
            }
        }
    }
}
