//! Agreement verification at a handoff (seed 003, "Agreement Verification"): the receiving tier's
//! restatement of what it was handed is held against what the handing-over tier recorded, and a
//! significant mismatch goes to the human on the next gate. The levels follow the seed's phase table:
//! L0 (topic, "what") at T1→T2, L1 (procedure, "how") at T2→T3/T4 and T4→T5, L2 (purpose, "why") at
//! T5→T1.
//!
//! The check is of scopes — the files (and directories, a path ending in `/`) each side names. The
//! handing-over side's scope is what its record declared (a squad lead's committed draft for its
//! implementers); the receiving side's is what it restated (or, at T4→T5, the paths the slice changed, as
//! the verifier receives them). Where either side declares nothing to hold the other against, there is
//! nothing to confirm: the outcome is [`Outcome::Assumed`], the seed's fallback record.

use std::collections::BTreeSet;

/// The seed's agreement levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Topic: do we share what we are building? (T1→T2)
    L0,
    /// Procedure: do we share how we build it / did the implementation stay with the design? (T2→T3/T4,
    /// T4→T5)
    L1,
    /// Purpose: does the result fulfil the original purpose? (T5→T1)
    L2,
}

impl Level {
    /// `L0`, `L1`, `L2`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::L0 => "L0",
            Level::L1 => "L1",
            Level::L2 => "L2",
        }
    }
}

/// The record of a handoff nobody can confirm, in the seed's words.
pub const ASSUMED: &str = agency_core::event::payload::AGREEMENT_ASSUMED;

/// What a handoff check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The restatement stays within what was handed over.
    Agreed,
    /// The restatement differs; `significant` ones go on the next gate's summary as anomalies.
    Mismatch {
        /// Whether a human should see it ([`significant`]).
        significant: bool,
        /// One line per difference.
        differences: Vec<String>,
    },
    /// Nothing to hold the restatement against (or no restatement): taken as agreed, and said so
    /// ([`ASSUMED`]).
    Assumed,
}

impl Outcome {
    /// `agreed`, `mismatch` or `assumed`, as the `agreement` event records it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Agreed => "agreed",
            Outcome::Mismatch { .. } => "mismatch",
            Outcome::Assumed => "assumed",
        }
    }
}

/// A path as either side may write it (`./src/a.rs`, ` src/ `), reduced to one spelling; a directory
/// keeps its trailing `/`.
fn path_key(path: &str) -> String {
    let mut path = path.trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path.to_string()
}

/// Whether `path` is within one of `scope`'s entries: the same file, or under a directory entry.
fn within(path: &str, scope: &BTreeSet<String>) -> bool {
    scope.iter().any(|entry| {
        if entry.ends_with('/') {
            path.starts_with(entry.as_str()) || path == entry.trim_end_matches('/')
        } else {
            path == entry
        }
    })
}

/// The differences between the handed-over scope and the receiving side's restated one: each restated
/// path outside the handed-over scope. Paths the receiver does not mention are not a difference (one
/// implementer does one task of its squad's draft, not all of it).
pub fn differences(handed: &[String], restated: &[String]) -> Vec<String> {
    let scope: BTreeSet<String> = handed
        .iter()
        .map(|p| path_key(p))
        .filter(|p| !p.is_empty())
        .collect();
    let outside: BTreeSet<String> = restated
        .iter()
        .map(|p| path_key(p))
        .filter(|p| !p.is_empty() && !within(p, &scope))
        .collect();
    outside
        .into_iter()
        .map(|p| format!("{p} is outside what was handed over"))
        .collect()
}

/// Whether differences at `level` are significant, so the handing-over tier is asked and, unless it
/// confirms, the human sees them on the next gate. `restated` is how many distinct paths and interfaces
/// the receiver's restatement held up for comparison. At L1 a single path outside the design is (the
/// implementation left the design it was handed: "misunderstanding disguised as agreement"); at L0, whose
/// scope is broad, it takes more than one (a stray file is noise there, two are a different topic); at L2,
/// see [`purpose_significant`].
pub fn significant(level: Level, differences: &[String], restated: usize) -> bool {
    match level {
        Level::L1 => !differences.is_empty(),
        Level::L0 => differences.len() > 1,
        Level::L2 => purpose_significant(differences.len(), restated),
    }
}

/// Whether an L2 (purpose) mismatch is significant: what was achieved went elsewhere than T1 intended —
/// two or more achieved paths outside T1's declared scope, or at least half of all that was achieved (a
/// one-file workstream whose one file is not the one T1 meant has missed its purpose as surely as a large
/// one that strayed twice). One stray among many is not.
pub fn purpose_significant(outside: usize, achieved: usize) -> bool {
    outside >= 2 || (outside > 0 && outside.saturating_mul(2) >= achieved)
}

/// The check of one handoff: `handed` is the handing-over side's declared scope, `restated` the receiving
/// side's (`None`: it restated nothing). Either empty is [`Outcome::Assumed`].
pub fn check(level: Level, handed: &[String], restated: Option<&[String]>) -> Outcome {
    check_scope(
        level,
        Scope {
            files: handed,
            interfaces: &[],
        },
        restated.map(|files| Scope {
            files,
            interfaces: &[],
        }),
    )
}

/// What one side of a handoff declares: the files (a path ending in `/` stands for everything under it)
/// and the interfaces (APIs, types, formats, by name).
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    /// Paths relative to the repository.
    pub files: &'a [String],
    /// Interface names (`GET /sum`, `Queue::push`).
    pub interfaces: &'a [String],
}

/// An interface name as either side may write it: trimmed, case and runs of blanks ignored.
fn interface_key(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The restated interfaces the handed-over ones do not name, one line each.
pub fn interface_differences(handed: &[String], restated: &[String]) -> Vec<String> {
    let scope: BTreeSet<String> = handed
        .iter()
        .map(|n| interface_key(n))
        .filter(|n| !n.is_empty())
        .collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    restated
        .iter()
        .filter(|n| {
            let key = interface_key(n);
            !key.is_empty() && !scope.contains(&key) && seen.insert(key)
        })
        .map(|n| format!("interface {} is outside what was handed over", n.trim()))
        .collect()
}

/// What comparing two scopes found: the differences in each part, and how many distinct paths and
/// interfaces the restatement held up for comparison. `None` from [`compare`]: nothing comparable.
struct Compared {
    files: Vec<String>,
    interfaces: Vec<String>,
    restated: usize,
}

/// Compares the parts both sides name something in (a side that names no interfaces cannot be held to
/// any); `None` where no part can be compared, or the receiver restated nothing.
fn compare(handed: Scope<'_>, restated: Option<Scope<'_>>) -> Option<Compared> {
    let restated = restated?;
    let any_path = |paths: &[String]| paths.iter().any(|p| !path_key(p).is_empty());
    let any_name = |names: &[String]| names.iter().any(|n| !interface_key(n).is_empty());
    let files = any_path(handed.files) && any_path(restated.files);
    let interfaces = any_name(handed.interfaces) && any_name(restated.interfaces);
    if !files && !interfaces {
        return None;
    }
    let mut compared = Compared {
        files: Vec::new(),
        interfaces: Vec::new(),
        restated: 0,
    };
    if files {
        compared.files = self::differences(handed.files, restated.files);
        compared.restated += restated
            .files
            .iter()
            .map(|p| path_key(p))
            .filter(|p| !p.is_empty())
            .collect::<BTreeSet<_>>()
            .len();
    }
    if interfaces {
        compared.interfaces = interface_differences(handed.interfaces, restated.interfaces);
        compared.restated += restated
            .interfaces
            .iter()
            .map(|n| interface_key(n))
            .filter(|n| !n.is_empty())
            .collect::<BTreeSet<_>>()
            .len();
    }
    Some(compared)
}

/// The outcome of a comparison whose significance `significant` decides from it.
fn outcome_of(compared: Option<Compared>, significant: impl Fn(&Compared) -> bool) -> Outcome {
    let Some(compared) = compared else {
        return Outcome::Assumed;
    };
    if compared.files.is_empty() && compared.interfaces.is_empty() {
        return Outcome::Agreed;
    }
    let significant = significant(&compared);
    let mut differences = compared.files;
    differences.extend(compared.interfaces);
    Outcome::Mismatch {
        significant,
        differences,
    }
}

/// The check of one handoff over both parts of a scope. Each part — files, interfaces — is compared only
/// where both sides name something in it (a side that names no interfaces cannot be held to any); where
/// no part can be compared, or the receiver restated nothing, the outcome is [`Outcome::Assumed`].
pub fn check_scope(level: Level, handed: Scope<'_>, restated: Option<Scope<'_>>) -> Outcome {
    outcome_of(compare(handed, restated), |c| {
        let all: Vec<String> = c.files.iter().chain(&c.interfaces).cloned().collect();
        significant(level, &all, c.restated)
    })
}

/// L1 at T3→T4: an implementer's own restatement of its task — its teachback's `files` (what it says it
/// will touch) and `interfaces` — held against its squad lead's committed draft (the draft's `files`, and
/// the interfaces it `provides` and `consumes`), once the teachback is decided and before the
/// implementer's work is handed on. The restatement's scope is only what the teachback names in those two
/// fields: its prose is not mined for paths (a guess would put false mismatches to the squad lead).
///
/// Significant ([`task_significant`]): any file outside the draft — the squad's files are what the T3
/// mesh reconciled with the peer squads, so an implementer about to touch another file may collide with
/// a peer's — or two or more interfaces outside it (a teachback's interfaces are free text, and one name
/// the draft spells differently is more often a paraphrase than a different design).
pub fn check_task(draft: Scope<'_>, restated: Option<Scope<'_>>) -> Outcome {
    outcome_of(compare(draft, restated), |c| {
        task_significant(c.files.len(), c.interfaces.len())
    })
}

/// Whether an implementer's restatement that differs from its squad's draft by `files` paths and
/// `interfaces` names is significant at T3→T4 (see [`check_task`]).
pub fn task_significant(files: usize, interfaces: usize) -> bool {
    files > 0 || interfaces >= 2
}

/// L2 at the run's acceptance: what T1's acceptance restates the run achieved (`achieved`: the files the
/// integration branch changes since the run's base) held against the scope the plan declared over all its
/// workstreams (`declared`: their `files`, a path ending in `/` for everything under it). The difference
/// is each declared entry nothing achieved covers (`… was declared and not achieved`; a directory is
/// covered by any achieved path under it): what no squad's joint verdict can see, since each holds only
/// what its slices achieved. An achieved path outside the declared scope is not a difference here: it was
/// held against its workstream's purpose at that squad's joint verdict (L2 at T5→T1), where T1 was asked
/// about it, and is not raised twice. Either side empty: [`Outcome::Assumed`].
///
/// Significant ([`acceptance_significant`]): at least half of the declared entries not achieved — the run
/// left half of its declared purpose undone.
pub fn check_acceptance(declared: &[String], achieved: Option<&[String]>) -> Outcome {
    let Some(achieved) = achieved else {
        return Outcome::Assumed;
    };
    let declared: BTreeSet<String> = declared
        .iter()
        .map(|p| path_key(p))
        .filter(|p| !p.is_empty())
        .collect();
    let achieved: BTreeSet<String> = achieved
        .iter()
        .map(|p| path_key(p))
        .filter(|p| !p.is_empty())
        .collect();
    if declared.is_empty() || achieved.is_empty() {
        return Outcome::Assumed;
    }
    let missed: Vec<&String> = declared
        .iter()
        .filter(|entry| {
            let entry = BTreeSet::from([(*entry).clone()]);
            !achieved.iter().any(|p| within(p, &entry))
        })
        .collect();
    if missed.is_empty() {
        return Outcome::Agreed;
    }
    Outcome::Mismatch {
        significant: acceptance_significant(missed.len(), declared.len()),
        differences: missed
            .iter()
            .map(|p| format!("{p} was declared and not achieved"))
            .collect(),
    }
}

/// Whether an acceptance's mismatch is significant (see [`check_acceptance`]): `missed` of `declared`
/// entries not achieved, at least half of them.
pub fn acceptance_significant(missed: usize, declared: usize) -> bool {
    missed > 0 && missed.saturating_mul(2) >= declared
}

/// The handing-over tier's answer, when a significant mismatch is put to it (seed 003, "Specialist
/// confirms or corrects").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirmation {
    /// The difference is fine: the receiver understood what was meant.
    Confirmed {
        /// Why, in one line.
        reason: String,
    },
    /// A real mismatch: the receiver did not understand what was handed over.
    Corrected {
        /// What is wrong, in one line.
        reason: String,
    },
    /// Nobody could be asked (no model agency calls for that tier, an outage, a budget spent, an answer
    /// that says neither): the seed's fallback record, and the check's own decision stands.
    Unavailable {
        /// Why it could not be asked.
        why: String,
    },
}

impl Confirmation {
    /// `confirmed`, `corrected` or `unavailable`, as the `agreement` event records it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Confirmation::Confirmed { .. } => "confirmed",
            Confirmation::Corrected { .. } => "corrected",
            Confirmation::Unavailable { .. } => "unavailable",
        }
    }

    /// The reason given, or why nobody could be asked.
    pub fn reason(&self) -> &str {
        match self {
            Confirmation::Confirmed { reason } | Confirmation::Corrected { reason } => reason,
            Confirmation::Unavailable { why } => why,
        }
    }
}

/// Whether a check's outcome is put to the handing-over tier: only a significant mismatch, the only
/// outcome that could reach a human — so agreed, assumed and minor handoffs cost no model call.
pub fn worth_asking(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Mismatch {
            significant: true,
            ..
        }
    )
}

/// Whether an asked-about mismatch goes on the next gate as an anomaly once answered: a correction does
/// (the handing-over tier says it is real), and so does a question nobody could answer (the fallback keeps
/// the check's own decision, which found it significant); a confirmation does not.
pub fn anomaly_after(confirmation: &Confirmation) -> bool {
    !matches!(confirmation, Confirmation::Confirmed { .. })
}

/// The longest reason kept, in characters.
const REASON_CHARS: usize = 200;

/// Reads the handing-over tier's answer — `fine` (is the difference fine?) and a one-line `reason` — into
/// a [`Confirmation`]. An answer without `fine` says neither, and counts as no answer. The reason is cut
/// to its first line and [`REASON_CHARS`] characters; a missing one is said to be missing.
pub fn read_answer(fine: Option<bool>, reason: Option<&str>) -> Confirmation {
    let line = reason
        .and_then(|r| r.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(|l| l.chars().take(REASON_CHARS).collect::<String>())
        .unwrap_or_else(|| "(no reason given)".to_string());
    match fine {
        Some(true) => Confirmation::Confirmed { reason: line },
        Some(false) => Confirmation::Corrected { reason: line },
        None => Confirmation::Unavailable {
            why: "the answer said neither fine nor not".to_string(),
        },
    }
}

/// The changed paths of a unified diff (`diff --git a/X b/Y`: `Y`, or `X` for a deletion), in order, each
/// once — what a T5 verifier receives of its slice.
pub fn diff_paths(patch: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for line in patch.lines() {
        let Some(rest) = line.strip_prefix("diff --git ") else {
            continue;
        };
        // `a/X b/Y`, split at the last ` b/` (a path may hold spaces, rarely ` b/`).
        let Some(at) = rest.rfind(" b/") else {
            continue;
        };
        let (old, new) = (&rest[..at], &rest[at + 3..]);
        let path = if new.is_empty() {
            old.strip_prefix("a/").unwrap_or(old)
        } else {
            new
        };
        if !path.is_empty() && !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_slice_within_its_squads_draft_agrees() {
        let out = check(
            Level::L1,
            &v(&["add.sh", "lib/"]),
            Some(&v(&["./add.sh", "lib/x.sh"])),
        );
        assert_eq!(out, Outcome::Agreed);
    }

    #[test]
    fn a_slice_touching_a_file_outside_the_design_is_a_significant_l1_mismatch() {
        let out = check(Level::L1, &v(&["add.sh"]), Some(&v(&["add.sh", "mul.sh"])));
        assert_eq!(
            out,
            Outcome::Mismatch {
                significant: true,
                differences: v(&["mul.sh is outside what was handed over"]),
            }
        );
    }

    #[test]
    fn one_stray_path_at_l0_or_among_many_at_l2_is_not_significant_two_are() {
        assert!(!significant(Level::L0, &v(&["x"]), 1));
        assert!(!significant(Level::L2, &v(&["x"]), 5));
        assert!(significant(Level::L0, &v(&["x", "y"]), 5));
        assert!(significant(Level::L2, &v(&["x", "y"]), 9));
        assert!(significant(Level::L1, &v(&["x"]), 9));
    }

    #[test]
    fn nothing_declared_on_either_side_is_the_fallback() {
        assert_eq!(check(Level::L1, &[], Some(&v(&["a"]))), Outcome::Assumed);
        assert_eq!(check(Level::L1, &v(&["a"]), None), Outcome::Assumed);
        assert_eq!(check(Level::L1, &v(&[" "]), Some(&v(&["b"]))), Outcome::Assumed);
    }

    #[test]
    fn interfaces_are_compared_only_where_both_sides_name_some() {
        let handed = v(&["GET /sum"]);
        let files = v(&["add.sh"]);
        // Files agree, and the handed side names no interfaces: the restated ones cannot be held to any.
        let out = check_scope(
            Level::L0,
            Scope {
                files: &files,
                interfaces: &[],
            },
            Some(Scope {
                files: &files,
                interfaces: &v(&["GET /mul"]),
            }),
        );
        assert_eq!(out, Outcome::Agreed);
        // Interfaces alone are enough to compare; spelling is forgiven, a different one is not.
        let out = check_scope(
            Level::L1,
            Scope {
                files: &[],
                interfaces: &handed,
            },
            Some(Scope {
                files: &files,
                interfaces: &v(&[" get  /SUM ", "GET /mul", "get /mul"]),
            }),
        );
        assert_eq!(
            out,
            Outcome::Mismatch {
                significant: true,
                differences: v(&["interface GET /mul is outside what was handed over"]),
            }
        );
        // Nothing comparable: the fallback.
        let out = check_scope(
            Level::L0,
            Scope {
                files: &files,
                interfaces: &[],
            },
            Some(Scope {
                files: &[],
                interfaces: &handed,
            }),
        );
        assert_eq!(out, Outcome::Assumed);
        assert_eq!(check_scope(Level::L0, Scope::default(), None), Outcome::Assumed);
    }

    #[test]
    fn diff_paths_reads_every_changed_file_once() {
        let patch = "diff --git a/add.sh b/add.sh\n--- a/add.sh\n+++ b/add.sh\n@@ -1 +1 @@\n-x\n+y\n\
                     diff --git a/old name.txt b/new name.txt\nrename from old name.txt\n\
                     diff --git a/add.sh b/add.sh\n";
        assert_eq!(diff_paths(patch), v(&["add.sh", "new name.txt"]));
        assert!(diff_paths("").is_empty());
        assert!(diff_paths("diff --git garbage\n").is_empty());
    }

    #[test]
    fn only_a_significant_mismatch_is_asked_about_and_only_a_confirmation_clears_it() {
        assert!(worth_asking(&Outcome::Mismatch {
            significant: true,
            differences: v(&["x"]),
        }));
        assert!(!worth_asking(&Outcome::Mismatch {
            significant: false,
            differences: v(&["x"]),
        }));
        assert!(!worth_asking(&Outcome::Agreed) && !worth_asking(&Outcome::Assumed));
        assert!(!anomaly_after(&read_answer(Some(true), Some("mul.sh was meant"))));
        assert!(anomaly_after(&read_answer(Some(false), Some("only add.sh"))));
        assert!(anomaly_after(&read_answer(None, Some("hm"))));
        assert!(anomaly_after(&Confirmation::Unavailable { why: "outage".into() }));
    }

    #[test]
    fn an_answer_is_read_to_one_short_line() {
        assert_eq!(
            read_answer(Some(false), Some("\n  only add.sh was handed over  \nmore\n")),
            Confirmation::Corrected {
                reason: "only add.sh was handed over".into()
            }
        );
        assert_eq!(read_answer(Some(true), None).reason(), "(no reason given)");
        assert_eq!(
            read_answer(Some(true), Some(&"x".repeat(500))).reason().len(),
            200
        );
        assert_eq!(read_answer(None, None).as_str(), "unavailable");
    }

    #[test]
    fn at_l2_a_slice_whose_work_went_mostly_elsewhere_misses_its_purpose() {
        // T1 meant add.sh; the one file achieved is mul.sh.
        let out = check(Level::L2, &v(&["add.sh"]), Some(&v(&["mul.sh"])));
        assert_eq!(
            out,
            Outcome::Mismatch {
                significant: true,
                differences: v(&["mul.sh is outside what was handed over"]),
            }
        );
        // One stray file beside three meant ones is noise.
        let out = check(
            Level::L2,
            &v(&["src/"]),
            Some(&v(&["src/a.rs", "src/b.rs", "src/c.rs", "README.md"])),
        );
        assert!(
            matches!(
                out,
                Outcome::Mismatch {
                    significant: false,
                    ..
                }
            ),
            "{out:?}"
        );
        assert!(!purpose_significant(0, 0) && !purpose_significant(0, 7));
        assert!(purpose_significant(1, 2) && !purpose_significant(1, 3));
    }

    #[test]
    fn an_implementer_naming_a_file_its_squad_never_declared_is_significant_at_t3_t4() {
        let draft = v(&["add.sh", "lib/"]);
        let provides = v(&["add CLI"]);
        let handed = Scope {
            files: &draft,
            interfaces: &provides,
        };
        let within = v(&["./add.sh", "lib/x.sh"]);
        let out = check_task(
            handed,
            Some(Scope {
                files: &within,
                interfaces: &v(&["ADD  cli"]),
            }),
        );
        assert_eq!(out, Outcome::Agreed);
        let stray = v(&["add.sh", "mul.sh"]);
        let out = check_task(
            handed,
            Some(Scope {
                files: &stray,
                interfaces: &[],
            }),
        );
        assert_eq!(
            out,
            Outcome::Mismatch {
                significant: true,
                differences: v(&["mul.sh is outside what was handed over"]),
            }
        );
        // One interface spelled another way is a paraphrase; two are a different design.
        let one = v(&["adder"]);
        let out = check_task(
            handed,
            Some(Scope {
                files: &within,
                interfaces: &one,
            }),
        );
        assert!(
            matches!(
                out,
                Outcome::Mismatch {
                    significant: false,
                    ..
                }
            ),
            "{out:?}"
        );
        let two = v(&["adder", "mul CLI"]);
        let out = check_task(
            handed,
            Some(Scope {
                files: &within,
                interfaces: &two,
            }),
        );
        assert!(
            matches!(
                out,
                Outcome::Mismatch {
                    significant: true,
                    ..
                }
            ),
            "{out:?}"
        );
        // A teachback that names no files (and no interfaces) cannot be held to the draft: the fallback.
        assert_eq!(check_task(handed, Some(Scope::default())), Outcome::Assumed);
        assert_eq!(check_task(handed, None), Outcome::Assumed);
        assert_eq!(
            check_task(
                Scope::default(),
                Some(Scope {
                    files: &stray,
                    interfaces: &[]
                })
            ),
            Outcome::Assumed
        );
    }

    #[test]
    fn an_acceptance_missing_half_the_plans_scope_is_a_significant_l2_mismatch() {
        let declared = v(&["add.sh", "mul.sh", "docs/", "neg.sh"]);
        // Everything declared achieved (docs/ by a file under it): agreed.
        let all = v(&["add.sh", "mul.sh", "docs/a.md", "neg.sh"]);
        assert_eq!(check_acceptance(&declared, Some(&all)), Outcome::Agreed);
        // Half of it not achieved.
        let half = v(&["add.sh", "./mul.sh"]);
        assert_eq!(
            check_acceptance(&declared, Some(&half)),
            Outcome::Mismatch {
                significant: true,
                differences: v(&[
                    "docs/ was declared and not achieved",
                    "neg.sh was declared and not achieved"
                ]),
            }
        );
        // One of four not achieved, nothing stray: recorded, not significant.
        let most = v(&["add.sh", "mul.sh", "docs/a.md"]);
        assert!(matches!(
            check_acceptance(&declared, Some(&most)),
            Outcome::Mismatch {
                significant: false,
                ..
            }
        ));
        // Everything declared achieved, and as much again elsewhere: not raised again here (each
        // squad's joint verdict held its strays against its purpose).
        let wide = v(&["add.sh", "mul.sh", "docs/a.md", "neg.sh", "x", "y"]);
        assert_eq!(check_acceptance(&declared, Some(&wide)), Outcome::Agreed);
        assert_eq!(check_acceptance(&[], Some(&all)), Outcome::Assumed);
        assert_eq!(check_acceptance(&declared, Some(&[])), Outcome::Assumed);
        assert_eq!(check_acceptance(&declared, None), Outcome::Assumed);
    }

    fn path() -> impl Strategy<Value = String> {
        "(\\./)?[a-c]{1,2}(/[a-c]{1,2})?/?"
    }

    proptest! {
        /// A receiver restating exactly what it was handed always agrees, however it spells the paths.
        #[test]
        fn restating_the_handoff_agrees(handed in proptest::collection::vec(path(), 1..6)) {
            let restated: Vec<String> = handed.iter().map(|p| format!(" ./{} ", p.trim_start_matches("./"))).collect();
            prop_assert_eq!(check(Level::L1, &handed, Some(&restated)), Outcome::Agreed);
        }

        /// Every difference names a restated path outside the handed-over scope, and only those; at L1 any
        /// difference is significant.
        #[test]
        fn differences_are_exactly_the_paths_outside(
            handed in proptest::collection::vec(path(), 1..6),
            restated in proptest::collection::vec(path(), 1..6),
        ) {
            let out = check(Level::L1, &handed, Some(&restated));
            let scope: BTreeSet<String> = handed.iter().map(|p| path_key(p)).collect();
            let outside: BTreeSet<String> = restated.iter().map(|p| path_key(p)).filter(|p| !within(p, &scope)).collect();
            match out {
                Outcome::Agreed => prop_assert!(outside.is_empty()),
                Outcome::Mismatch { significant, differences } => {
                    prop_assert!(significant);
                    prop_assert_eq!(differences.len(), outside.len());
                }
                Outcome::Assumed => prop_assert!(false, "both sides declared a scope"),
            }
        }

        /// L2 significance: never without a path outside, always when everything achieved is outside, and
        /// more outside (of as much achieved) never makes it less significant.
        #[test]
        fn purpose_significance_is_monotone_in_what_went_elsewhere(
            outside in 0usize..20,
            more in 0usize..5,
            inside in 0usize..20,
        ) {
            let achieved = outside + inside;
            if outside == 0 {
                prop_assert!(!purpose_significant(outside, achieved));
            }
            if outside > 0 && inside == 0 {
                prop_assert!(purpose_significant(outside, achieved));
            }
            if purpose_significant(outside, achieved) {
                prop_assert!(purpose_significant(outside + more, achieved + more));
            }
        }

        /// At T3→T4 a file outside the draft is always significant, and an implementer restating exactly
        /// its squad's draft always agrees.
        #[test]
        fn an_implementer_restating_its_draft_agrees_and_any_stray_file_is_significant(
            draft in proptest::collection::vec(path(), 1..6),
            restated in proptest::collection::vec(path(), 1..6),
        ) {
            let handed = Scope { files: &draft, interfaces: &[] };
            prop_assert_eq!(check_task(handed, Some(Scope { files: &draft, interfaces: &[] })), Outcome::Agreed);
            let outside = differences(&draft, &restated);
            match check_task(handed, Some(Scope { files: &restated, interfaces: &[] })) {
                Outcome::Agreed => prop_assert!(outside.is_empty()),
                Outcome::Mismatch { significant, differences } => {
                    prop_assert!(significant);
                    prop_assert_eq!(differences, outside);
                }
                Outcome::Assumed => prop_assert!(false, "both sides named files"),
            }
        }

        /// Achieving less of the declared scope never makes a significant mismatch insignificant; nothing
        /// missed is never significant, everything missed always is.
        #[test]
        fn acceptance_significance_grows_with_what_is_missed(
            missed in 0usize..10,
            more in 0usize..5,
            declared_extra in 0usize..10,
        ) {
            let declared = missed + more + declared_extra;
            if acceptance_significant(missed, declared) {
                prop_assert!(acceptance_significant(missed + more, declared));
            }
            prop_assert!(!acceptance_significant(0, declared));
            if declared > 0 {
                prop_assert!(acceptance_significant(declared, declared));
            }
        }

        #[test]
        fn an_acceptance_achieving_exactly_the_declared_files_agrees(
            declared in proptest::collection::vec("[a-c]{1,2}(/[a-c]{1,2})?", 1..6),
        ) {
            prop_assert_eq!(check_acceptance(&declared, Some(&declared)), Outcome::Agreed);
        }

        /// Adding paths to the handed-over scope never adds a difference (monotone).
        #[test]
        fn a_wider_handoff_never_finds_more(
            handed in proptest::collection::vec(path(), 1..5),
            extra in proptest::collection::vec(path(), 0..4),
            restated in proptest::collection::vec(path(), 1..6),
        ) {
            let mut wider = handed.clone();
            wider.extend(extra);
            prop_assert!(differences(&wider, &restated).len() <= differences(&handed, &restated).len());
        }
    }
}
