//! The diff each implementer's commit was handed to its verifier with, kept for that slice's sign-off: the
//! sign-off needs the same changed paths and the same patch (when the workstream branch has not moved
//! meanwhile, which it checks), so git is asked once per slice instead of twice.
//!
//! Only a bounded number of diffs is kept, the oldest dropped first: a sign-off whose diff is gone (or that
//! another runner claims, or that runs after a restart) asks git itself, as it would without this.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use agency_core::BriefId;
use agency_signoff::Diffed;

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
    diffs: HashMap<BriefId, (Diffed, usize)>,
    /// The order they were kept in, oldest first; ids already taken are skipped when their turn comes.
    order: VecDeque<BriefId>,
    bytes: usize,
}

impl SliceDiffs {
    /// Keeps `diffed`, the diff of `implementer`'s commit, for its sign-off.
    pub fn keep(&self, implementer: BriefId, diffed: Diffed) {
        let size = OVERHEAD_BYTES
            + diffed.head.text.len()
            + diffed
                .changes
                .iter()
                .map(|c| c.path.as_os_str().len() + c.old_path.as_ref().map_or(0, |p| p.as_os_str().len()))
                .sum::<usize>();
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = &mut *kept;
        if let Some((_, replaced)) = kept.diffs.insert(implementer, (diffed, size)) {
            kept.bytes -= replaced;
        }
        kept.order.push_back(implementer);
        kept.bytes += size;
        while kept.diffs.len() > MAX_KEPT || kept.bytes > MAX_KEPT_BYTES {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            if let Some((_, size)) = kept.diffs.remove(&oldest) {
                kept.bytes -= size;
            }
        }
        // Taken ids linger in `order` until their turn: past twice the bound they are swept out at once.
        if kept.order.len() > 2 * MAX_KEPT {
            let diffs = &kept.diffs;
            kept.order.retain(|id| diffs.contains_key(id));
        }
    }

    /// The diff of `implementer`'s commit, if it is still kept; it is forgotten here.
    pub fn take(&self, implementer: BriefId) -> Option<Diffed> {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (diffed, size) = kept.diffs.remove(&implementer)?;
        kept.bytes -= size;
        Some(diffed)
    }
}

#[cfg(test)]
mod tests {
    use agency_exec::DiffHead;

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
    fn a_diff_is_taken_once_and_the_oldest_go_first_past_the_bounds() {
        let kept = SliceDiffs::default();
        let (a, b) = (BriefId::new(), BriefId::new());
        kept.keep(a, diff(10));
        assert_eq!(kept.take(b), None);
        assert_eq!(kept.take(a), Some(diff(10)));
        assert_eq!(kept.take(a), None);

        let ids: Vec<BriefId> = (0..=MAX_KEPT).map(|_| BriefId::new()).collect();
        for id in &ids {
            kept.keep(*id, diff(1));
        }
        assert_eq!(kept.take(ids[0]), None);
        assert_eq!(kept.take(ids[1]), Some(diff(1)));

        let big = MAX_KEPT_BYTES / 2 - OVERHEAD_BYTES + 1;
        kept.keep(a, diff(big));
        kept.keep(b, diff(big));
        assert_eq!(kept.take(a), None);
        assert_eq!(kept.take(b), Some(diff(big)));
        assert_eq!(kept.take(ids[MAX_KEPT]), None);
        assert_eq!(kept.0.lock().unwrap().bytes, 0);
    }

    #[test]
    fn taken_diffs_do_not_pile_up_in_the_order() {
        let kept = SliceDiffs::default();
        for _ in 0..10 * MAX_KEPT {
            let id = BriefId::new();
            kept.keep(id, diff(1));
            assert_eq!(kept.take(id), Some(diff(1)));
        }
        let inner = kept.0.lock().unwrap();
        assert!(inner.order.len() <= 2 * MAX_KEPT + 1, "{}", inner.order.len());
        assert!(inner.diffs.is_empty());
        assert_eq!(inner.bytes, 0);
    }
}
