//! The T3 mesh (seed 001, "T3 Mesh via Blackboard"): the squad leads of one T2 domain each publish a draft
//! — the files they expect to touch and the interfaces they provide and consume — and no T4 work goes out
//! until the drafts do not overlap. Two squads claiming one file, or both providing one interface, is an
//! overlap; consuming what a peer provides is what interfaces are for, and is not.
//!
//! A round closes when every squad lead of the domain has reported its draft. Its overlaps decide
//! ([`step`]): none left, every draft is committed; overlaps left and rounds remain, the squads named in
//! them draft again with their peers' drafts and the overlaps; overlaps left after the last round
//! (`retry.t3_mesh_rounds`, [`MESH_ROUNDS`] by default)
//! (or the mesh's time runs out, [`crate::tiers::mesh_clock`]), the domain's T2 specialist gets the
//! unreconciled overlaps. Nothing is ever force-committed.

use std::collections::BTreeMap;

use agency_core::tiers::SquadOutput;
use serde::{Deserialize, Serialize};

/// How many rounds a mesh may take to reconcile its drafts before its specialist is asked to re-scope, by
/// default (`retry.t3_mesh_rounds`).
pub const MESH_ROUNDS: u32 = 3;

/// What two squads both claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claimed {
    /// A file both expect to touch.
    File,
    /// An interface both provide.
    Interface,
}

impl Claimed {
    fn as_str(self) -> &'static str {
        match self {
            Claimed::File => "file",
            Claimed::Interface => "interface",
        }
    }
}

/// One file or interface claimed by more than one squad of a mesh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlap {
    /// A file or an interface.
    pub kind: Claimed,
    /// The file's path (as the drafts name it, without a leading `./`) or the interface's name.
    pub name: String,
    /// The squads claiming it, in the order given.
    pub squads: Vec<String>,
}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} claimed by {}",
            self.kind.as_str(),
            self.name,
            self.squads.join(", ")
        )
    }
}

/// A path as drafts may write it (`./src/a.rs`, ` src/a.rs `) reduced to one spelling.
fn file_key(path: &str) -> String {
    let mut path = path.trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path.trim_end_matches('/').to_string()
}

/// The overlaps between the drafts of one mesh, each `(squad title, draft)`: files claimed by more than one
/// squad, then interfaces provided by more than one, each sorted by name. A squad naming a file twice is
/// not an overlap with itself.
pub fn overlaps(drafts: &[(&str, &SquadOutput)]) -> Vec<Overlap> {
    let mut claims: BTreeMap<(Claimed, String), Vec<String>> = BTreeMap::new();
    for (squad, draft) in drafts {
        let named = draft.files.iter().map(|f| (Claimed::File, file_key(f))).chain(
            draft
                .provides
                .iter()
                .map(|i| (Claimed::Interface, i.trim().to_string())),
        );
        for key in named {
            if key.1.is_empty() {
                continue;
            }
            let holders = claims.entry(key).or_default();
            if !holders.iter().any(|h| h == squad) {
                holders.push(squad.to_string());
            }
        }
    }
    claims
        .into_iter()
        .filter(|(_, squads)| squads.len() > 1)
        .map(|((kind, name), squads)| Overlap { kind, name, squads })
        .collect()
}

/// What a mesh does once round `round` (1 for the first drafts) closed with `overlaps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeshStep {
    /// No overlap: every draft is committed, and the squads' tasks may go out (after their gate).
    Commit,
    /// Overlaps left and rounds remain: the squads named (sorted, once each) draft again in `round`.
    Reconcile {
        /// The round they draft for.
        round: u32,
        /// The squads in an overlap.
        squads: Vec<String>,
    },
    /// Overlaps left after the last round: the domain's specialist re-scopes; never force-committed.
    Escalate,
}

/// What a mesh does once round `round` closed with `overlaps`, when it may take `max_rounds` rounds (`0`
/// reads as 1: the configuration refuses it, and a mesh always has its first drafts).
pub fn step(round: u32, max_rounds: u32, overlaps: &[Overlap]) -> MeshStep {
    if overlaps.is_empty() {
        return MeshStep::Commit;
    }
    if round >= max_rounds.max(1) {
        return MeshStep::Escalate;
    }
    let mut squads: Vec<String> = overlaps.iter().flat_map(|o| o.squads.iter().cloned()).collect();
    squads.sort();
    squads.dedup();
    MeshStep::Reconcile {
        round: round + 1,
        squads,
    }
}

/// The overlaps as one line for the live log: `2 overlaps left (file add.sh: a, b; interface Api: a, c)`.
pub fn overlaps_line(overlaps: &[Overlap]) -> String {
    if overlaps.is_empty() {
        return "no overlaps left".into();
    }
    let each: Vec<String> = overlaps
        .iter()
        .map(|o| format!("{} {}: {}", o.kind.as_str(), o.name, o.squads.join(", ")))
        .collect();
    format!(
        "{} overlap{} left ({})",
        overlaps.len(),
        if overlaps.len() == 1 { "" } else { "s" },
        each.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn draft(files: &[&str], provides: &[&str], consumes: &[&str]) -> SquadOutput {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        SquadOutput {
            tasks: vec![],
            notes: vec![],
            files: strings(files),
            provides: strings(provides),
            consumes: strings(consumes),
            understanding: None,
        }
    }

    #[test]
    fn two_squads_claiming_one_file_overlap_and_consuming_is_not_claiming() {
        let a = draft(&["add.sh", "./lib.sh"], &["Adder"], &[]);
        let b = draft(&["mul.sh", "lib.sh"], &[], &["Adder"]);
        let found = overlaps(&[("a", &a), ("b", &b)]);
        assert_eq!(
            found,
            vec![Overlap {
                kind: Claimed::File,
                name: "lib.sh".into(),
                squads: vec!["a".into(), "b".into()]
            }]
        );
        assert_eq!(found[0].to_string(), "file lib.sh claimed by a, b");
        assert_eq!(overlaps_line(&found), "1 overlap left (file lib.sh: a, b)");
    }

    #[test]
    fn two_providers_of_one_interface_overlap_and_a_squad_never_overlaps_itself() {
        let a = draft(&["x", "x"], &["Api", "Api"], &[]);
        let b = draft(&[], &["Api"], &[]);
        let c = draft(&[], &["Api"], &[]);
        let found = overlaps(&[("a", &a), ("b", &b), ("c", &c)]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, Claimed::Interface);
        assert_eq!(found[0].squads, ["a", "b", "c"]);
        assert!(overlaps(&[("a", &a)]).is_empty());
    }

    #[test]
    fn rounds_reconcile_while_they_last_then_escalate() {
        let o = Overlap {
            kind: Claimed::File,
            name: "f".into(),
            squads: vec!["b".into(), "a".into()],
        };
        assert_eq!(step(1, MESH_ROUNDS, &[]), MeshStep::Commit);
        assert_eq!(
            step(1, MESH_ROUNDS, std::slice::from_ref(&o)),
            MeshStep::Reconcile {
                round: 2,
                squads: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(
            step(MESH_ROUNDS, MESH_ROUNDS, std::slice::from_ref(&o)),
            MeshStep::Escalate
        );
        assert_eq!(step(MESH_ROUNDS, MESH_ROUNDS, &[]), MeshStep::Commit);
        // A bound of one round escalates the first drafts' overlaps; five rounds reconcile at round 4.
        assert_eq!(step(1, 1, std::slice::from_ref(&o)), MeshStep::Escalate);
        assert_eq!(step(1, 0, std::slice::from_ref(&o)), MeshStep::Escalate);
        assert!(matches!(step(4, 5, &[o]), MeshStep::Reconcile { round: 5, .. }));
    }

    proptest! {
        /// Every overlap names at least two distinct squads that each claim it, and every name claimed by
        /// two squads is reported; a mesh never goes on past its last round.
        #[test]
        fn overlaps_are_exactly_the_shared_claims(
            claims in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..4), 1..12),
            round in 1u32..6,
            max_rounds in 1u32..6,
        ) {
            let drafts: Vec<(String, SquadOutput)> = claims
                .iter()
                .enumerate()
                .map(|(i, files)| {
                    let names: Vec<String> = files.iter().map(|f| format!("f{f}")).collect();
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    (format!("s{i}"), draft(&refs, &[], &[]))
                })
                .collect();
            let view: Vec<(&str, &SquadOutput)> = drafts.iter().map(|(s, d)| (s.as_str(), d)).collect();
            let found = overlaps(&view);
            for file in 0u8..6 {
                let holders = claims.iter().filter(|c| c.contains(&file)).count();
                let reported = found.iter().find(|o| o.name == format!("f{file}"));
                prop_assert_eq!(holders > 1, reported.is_some());
                if let Some(o) = reported {
                    prop_assert_eq!(o.squads.len(), holders);
                }
            }
            match step(round, max_rounds, &found) {
                MeshStep::Commit => prop_assert!(found.is_empty()),
                MeshStep::Reconcile { round: next, squads } => {
                    prop_assert!(next <= max_rounds && next == round + 1);
                    prop_assert!(squads.len() >= 2);
                }
                MeshStep::Escalate => prop_assert!(round >= max_rounds && !found.is_empty()),
            }
        }
    }
}
