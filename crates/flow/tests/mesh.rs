//! The T3 mesh's round decision with plain values: what a closed round leads to under each round bound
//! (`retry.t3_mesh_rounds`), which squads draft again, and the line the live log shows.
//!
//! Took over from `crates/engine/tests/engine/mesh.rs`: `the_mesh_round_bound_is_the_configured_one` (a
//! bound of one escalates the first drafts' overlap at once). The engine path it drove, a mesh escalating
//! to its domain's owner, is kept in
//! `a_mesh_that_cannot_agree_goes_to_its_domain_owner_with_the_overlaps_and_never_commits`, which now runs
//! with a configured bound of two (not the default) so the engine's reading of the key stays checked.

use agency_core::tiers::SquadOutput;
use agency_flow::mesh::{Claimed, MESH_ROUNDS, MeshStep, Overlap, overlaps, overlaps_line, step};
use proptest::prelude::*;

fn draft(files: &[&str], provides: &[&str]) -> SquadOutput {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    SquadOutput {
        tasks: vec![],
        notes: vec![],
        files: strings(files),
        provides: strings(provides),
        consumes: vec![],
        understanding: None,
    }
}

/// The seed script's first drafts: both squads claim NOTES.md.
fn notes_overlap() -> Vec<Overlap> {
    let arith = draft(&["add.sh", "mul.sh", "NOTES.md"], &[]);
    let sign = draft(&["neg.sh", "./NOTES.md"], &[]);
    overlaps(&[("squad-arith", &arith), ("squad-sign", &sign)])
}

#[test]
fn a_bound_of_one_escalates_the_first_drafts_overlap_at_once() {
    assert_eq!(step(1, 1, &notes_overlap()), MeshStep::Escalate);
}

#[test]
fn a_bound_of_zero_reads_as_one_round() {
    assert_eq!(step(1, 0, &notes_overlap()), MeshStep::Escalate);
    assert_eq!(step(1, 0, &[]), MeshStep::Commit);
}

#[test]
fn with_rounds_left_the_squads_in_an_overlap_draft_again_in_the_next_round() {
    assert_eq!(
        step(1, 2, &notes_overlap()),
        MeshStep::Reconcile {
            round: 2,
            squads: vec!["squad-arith".into(), "squad-sign".into()]
        }
    );
    assert_eq!(step(2, 2, &notes_overlap()), MeshStep::Escalate, "the last round");
    assert_eq!(
        step(2, MESH_ROUNDS, &notes_overlap()),
        MeshStep::Reconcile {
            round: 3,
            squads: vec!["squad-arith".into(), "squad-sign".into()]
        },
        "the default bound is three"
    );
    assert_eq!(
        step(MESH_ROUNDS, MESH_ROUNDS, &notes_overlap()),
        MeshStep::Escalate
    );
}

#[test]
fn no_overlap_commits_in_any_round_even_past_the_bound() {
    for round in 1..=5 {
        assert_eq!(step(round, 3, &[]), MeshStep::Commit, "round {round}");
    }
}

#[test]
fn the_overlap_line_names_the_file_and_its_squads_in_draft_order() {
    assert_eq!(
        overlaps_line(&notes_overlap()),
        "1 overlap left (file NOTES.md: squad-arith, squad-sign)"
    );
    assert_eq!(overlaps_line(&[]), "no overlaps left");
    assert_eq!(
        notes_overlap()[0].to_string(),
        "file NOTES.md claimed by squad-arith, squad-sign"
    );
}

#[test]
fn a_dozen_squads_on_one_file_are_one_overlap_and_all_draft_again() {
    let drafts: Vec<(String, SquadOutput)> = (0..12)
        .map(|i| {
            let title = format!("squad-{i:02}");
            let own = format!("{title}.sh");
            let api = format!("{title}-api");
            (title, draft(&["shared.sh", &own], &[&api]))
        })
        .collect();
    let named: Vec<(&str, &SquadOutput)> = drafts.iter().map(|(t, d)| (t.as_str(), d)).collect();
    let found = overlaps(&named);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].kind, found[0].name.as_str()),
        (Claimed::File, "shared.sh")
    );
    match step(1, MESH_ROUNDS, &found) {
        MeshStep::Reconcile { round, squads } => {
            assert_eq!(round, 2);
            assert_eq!(squads.len(), 12);
        }
        other => panic!("{other:?}"),
    }
}

proptest! {
    /// A mesh never commits with overlaps left, never goes past its bound, and only ever sends back the
    /// squads an overlap names.
    #[test]
    fn a_round_never_commits_an_overlap_nor_runs_past_its_bound(
        round in 1u32..6,
        max_rounds in 0u32..6,
        claims in prop::collection::vec(prop::collection::vec(0usize..4, 0..4), 1..5),
    ) {
        let drafts: Vec<(String, SquadOutput)> = claims
            .iter()
            .enumerate()
            .map(|(i, files)| {
                let files: Vec<String> = files.iter().map(|f| format!("f{f}.rs")).collect();
                let refs: Vec<&str> = files.iter().map(String::as_str).collect();
                (format!("s{i}"), draft(&refs, &[]))
            })
            .collect();
        let named: Vec<(&str, &SquadOutput)> = drafts.iter().map(|(t, d)| (t.as_str(), d)).collect();
        let found = overlaps(&named);
        match step(round, max_rounds, &found) {
            MeshStep::Commit => prop_assert!(found.is_empty()),
            MeshStep::Escalate => {
                prop_assert!(!found.is_empty());
                prop_assert!(round >= max_rounds.max(1));
            }
            MeshStep::Reconcile { round: next, squads } => {
                prop_assert!(!found.is_empty());
                prop_assert_eq!(next, round + 1);
                prop_assert!(next <= max_rounds.max(1));
                for squad in &squads {
                    prop_assert!(found.iter().any(|o| o.squads.contains(squad)));
                }
            }
        }
    }
}
