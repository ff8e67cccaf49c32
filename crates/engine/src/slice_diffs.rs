//! The diff each implementer's commit was handed to its verifier with, kept for that slice's sign-off: the
//! sign-off needs the same changed paths and the same patch (when the workstream branch has not moved
//! meanwhile, which it checks), so git is asked once per slice instead of twice.
//!
//! Only a bounded number of diffs is kept in memory, the oldest put out first: those are written to the
//! blackboard instead ([`spilled_artifact`], with the implementer's handover), where its sign-off reads it
//! back ([`read_spilled`]). A runner whose agents all finish at once has tens of thousands of slices waiting
//! for their sign-off (a real one has a few), and each of those asked git for its diff again. A sign-off
//! whose diff is in neither place (another runner claimed it, or it runs after a restart) asks git itself,
//! as it would without this.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use agency_core::{BriefId, RunId};
use agency_exec::{ChangeKind, DiffHead, FileChange};
use agency_signoff::Diffed;
use agency_store::{Blackboard, NewArtifact};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Diffs kept at most (a runner whose agents all finish at once can have thousands of slices waiting for
/// their sign-off; a real one has a few).
const MAX_KEPT: usize = 4096;
/// Bytes kept at most, all diffs together (a judge is shown up to 60 KiB of each patch).
const MAX_KEPT_BYTES: usize = 2 * 1024 * 1024;
/// What one kept diff costs besides its patch and paths: its ids, its allocations, its place in the queue.
const OVERHEAD_BYTES: usize = 256;

/// The diffs waiting for their sign-off, by implementer; shared by the clones of one runner.
#[derive(Debug, Clone, Default)]
pub struct SliceDiffs(Arc<Mutex<Kept>>);

#[derive(Debug, Default)]
struct Kept {
    diffs: HashMap<BriefId, Entry>,
    /// The order they were kept in, oldest first; ids already taken are skipped when their turn comes.
    order: VecDeque<BriefId>,
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    run: RunId,
    diffed: Diffed,
    size: usize,
}

/// A diff put out of memory to make room, for the blackboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spilled {
    /// The run of its implementer.
    pub run: RunId,
    /// The implementer whose commit it is of.
    pub implementer: BriefId,
    /// The diff.
    pub diffed: Diffed,
}

impl SliceDiffs {
    /// Keeps `diffed`, the diff of `implementer`'s commit in `run`, for its sign-off. Returns the diffs put
    /// out to make room, oldest first, for the caller to write to the blackboard.
    pub fn keep(&self, run: RunId, implementer: BriefId, diffed: Diffed) -> Vec<Spilled> {
        let size = OVERHEAD_BYTES
            + diffed.head.text.len()
            + diffed
                .changes
                .iter()
                .map(|c| c.path.as_os_str().len() + c.old_path.as_ref().map_or(0, |p| p.as_os_str().len()))
                .sum::<usize>();
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = &mut *kept;
        if let Some(replaced) = kept.diffs.insert(implementer, Entry { run, diffed, size }) {
            kept.bytes -= replaced.size;
        }
        kept.order.push_back(implementer);
        kept.bytes += size;
        let mut spilled = Vec::new();
        while kept.diffs.len() > MAX_KEPT || kept.bytes > MAX_KEPT_BYTES {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            if let Some(entry) = kept.diffs.remove(&oldest) {
                kept.bytes -= entry.size;
                spilled.push(Spilled {
                    run: entry.run,
                    implementer: oldest,
                    diffed: entry.diffed,
                });
            }
        }
        // Taken ids linger in `order` until their turn: past twice the bound they are swept out at once.
        if kept.order.len() > 2 * MAX_KEPT {
            let diffs = &kept.diffs;
            kept.order.retain(|id| diffs.contains_key(id));
        }
        spilled
    }

    /// The diff of `implementer`'s commit, if it is still kept; it is forgotten here.
    pub fn take(&self, implementer: BriefId) -> Option<Diffed> {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = kept.diffs.remove(&implementer)?;
        kept.bytes -= entry.size;
        Some(entry.diffed)
    }
}

/// The artifact name of a slice's diff put out of memory until its sign-off.
pub fn spilled_name(implementer: BriefId) -> String {
    crate::artifacts::brief_artifact_name("signoff-diff", implementer)
}

/// What a spilled diff is written as (JSON): everything a sign-off takes of it.
#[derive(Debug, Serialize, Deserialize)]
struct Written {
    base: String,
    commit: String,
    /// `[letter, path, old path]` per changed path.
    changes: Vec<(char, String, Option<String>)>,
    head: String,
    total_bytes: u64,
}

/// The artifact `spilled` is written to the blackboard as; `None` when a path of it is not UTF-8 (its
/// sign-off then asks git for the diff again).
pub fn spilled_artifact(spilled: Spilled) -> Option<NewArtifact> {
    let diffed = spilled.diffed;
    let text = |path: &PathBuf| path.to_str().map(str::to_owned);
    let changes = diffed
        .changes
        .iter()
        .map(|change| {
            let old = match &change.old_path {
                Some(old) => Some(text(old)?),
                None => None,
            };
            Some((change.kind.letter(), text(&change.path)?, old))
        })
        .collect::<Option<Vec<_>>>()?;
    let written = Written {
        base: diffed.base,
        commit: diffed.commit,
        changes,
        head: diffed.head.text,
        total_bytes: diffed.head.total_bytes,
    };
    let bytes = serde_json::to_vec(&written).ok()?;
    Some(
        NewArtifact::new(
            spilled.run,
            spilled_name(spilled.implementer),
            "application/json",
            bytes,
        )
        .brief(spilled.implementer),
    )
}

/// The diff of `implementer`'s commit spilled to the blackboard, if it was; one that does not read back is
/// as good as none (its sign-off asks git).
pub fn read_spilled(store: &dyn Blackboard, run: RunId, implementer: BriefId) -> Result<Option<Diffed>> {
    let Some(artifact) = store.latest_artifact(run, &spilled_name(implementer))? else {
        return Ok(None);
    };
    let Ok(written) = serde_json::from_slice::<Written>(&artifact.bytes) else {
        return Ok(None);
    };
    Ok(Some(Diffed {
        base: written.base,
        commit: written.commit,
        changes: written
            .changes
            .into_iter()
            .map(|(letter, path, old)| FileChange {
                kind: ChangeKind::from_letter(letter),
                path: path.into(),
                old_path: old.map(PathBuf::from),
            })
            .collect(),
        head: DiffHead {
            text: written.head,
            total_bytes: written.total_bytes,
        },
    }))
}

#[cfg(test)]
mod tests {
    use agency_store::conformance::sample_brief;
    use agency_store::{NewRun, SqliteBlackboard};

    use super::*;

    fn diff(bytes: usize) -> Diffed {
        Diffed {
            base: "b".into(),
            commit: "c".into(),
            changes: Vec::new(),
            head: DiffHead {
                text: "x".repeat(bytes),
                total_bytes: bytes as u64,
            },
        }
    }

    #[test]
    fn a_diff_is_taken_once_and_the_oldest_go_out_first_past_the_bounds() {
        let kept = SliceDiffs::default();
        let run = RunId::new();
        let (a, b) = (BriefId::new(), BriefId::new());
        assert_eq!(kept.keep(run, a, diff(10)), []);
        assert_eq!(kept.take(b), None);
        assert_eq!(kept.take(a), Some(diff(10)));
        assert_eq!(kept.take(a), None);

        let ids: Vec<BriefId> = (0..=MAX_KEPT).map(|_| BriefId::new()).collect();
        let mut spilled = Vec::new();
        for id in &ids {
            spilled.extend(kept.keep(run, *id, diff(1)));
        }
        assert_eq!(
            spilled,
            [Spilled {
                run,
                implementer: ids[0],
                diffed: diff(1)
            }]
        );
        assert_eq!(kept.take(ids[0]), None);
        assert_eq!(kept.take(ids[1]), Some(diff(1)));

        let big = MAX_KEPT_BYTES / 2 - OVERHEAD_BYTES + 1;
        let mut spilled = kept.keep(run, a, diff(big));
        spilled.extend(kept.keep(run, b, diff(big)));
        // Room for a, then for b, put out the smaller ones kept before them, then a: oldest first.
        let out: Vec<BriefId> = spilled.iter().map(|s| s.implementer).collect();
        assert_eq!(out.first(), Some(&ids[2]));
        assert_eq!(out.last(), Some(&a));
        assert!(!out.contains(&b));
        assert_eq!(kept.take(a), None);
        assert_eq!(kept.take(b), Some(diff(big)));
        assert_eq!(kept.take(ids[MAX_KEPT]), None);
        assert_eq!(kept.0.lock().unwrap().bytes, 0);
    }

    #[test]
    fn taken_diffs_do_not_pile_up_in_the_order() {
        let kept = SliceDiffs::default();
        let run = RunId::new();
        for _ in 0..10 * MAX_KEPT {
            let id = BriefId::new();
            assert_eq!(kept.keep(run, id, diff(1)), []);
            assert_eq!(kept.take(id), Some(diff(1)));
        }
        let inner = kept.0.lock().unwrap();
        assert!(inner.order.len() <= 2 * MAX_KEPT + 1, "{}", inner.order.len());
        assert!(inner.diffs.is_empty());
        assert_eq!(inner.bytes, 0);
    }

    #[test]
    fn a_spilled_diff_reads_back_from_the_blackboard_as_it_was() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let brief = sample_brief(run, "implementer");
        store.insert_brief(&brief).unwrap();
        let implementer = brief.id;
        let diffed = Diffed {
            base: "a".repeat(40),
            commit: "b".repeat(40),
            changes: vec![
                FileChange {
                    kind: ChangeKind::Modified,
                    path: "src/lib.rs".into(),
                    old_path: None,
                },
                FileChange {
                    kind: ChangeKind::Renamed,
                    path: "docs/new name.md".into(),
                    old_path: Some("docs/old.md".into()),
                },
            ],
            head: DiffHead {
                text: "diff --git a/src/lib.rs b/src/lib.rs\n".into(),
                total_bytes: 12_345,
            },
        };
        assert_eq!(read_spilled(&store, run, implementer).unwrap(), None);
        let spilled = Spilled {
            run,
            implementer,
            diffed: diffed.clone(),
        };
        store.put_artifact(spilled_artifact(spilled).unwrap()).unwrap();
        assert_eq!(read_spilled(&store, run, implementer).unwrap(), Some(diffed));
        assert_eq!(read_spilled(&store, run, BriefId::new()).unwrap(), None);
    }

    #[test]
    fn a_diff_with_a_path_that_is_not_utf8_is_not_spilled() {
        use std::os::unix::ffi::OsStrExt;
        let mut diffed = diff(1);
        diffed.changes.push(FileChange {
            kind: ChangeKind::Added,
            path: std::ffi::OsStr::from_bytes(b"bad\xff").into(),
            old_path: None,
        });
        let spilled = Spilled {
            run: RunId::new(),
            implementer: BriefId::new(),
            diffed,
        };
        assert_eq!(spilled_artifact(spilled), None);
    }
}
