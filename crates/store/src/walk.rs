//! Walking a run's events of some kinds from a `seq` on, a page at a time: the loop every reader of a
//! run's log by kind needs (the runner's cursors, the records a page or a gate lists), written once.

use std::ops::ControlFlow;

use agency_core::{Event, EventKind, RunId};

use crate::{Blackboard, StoreError};

/// Events read per page: a page is decoded whole, so a walk holds at most this many events at once.
pub const PAGE: usize = 500;

/// Hands each event of `kinds` of `run` with `seq > after` to `each`, oldest first, until `each` breaks
/// or the log ends. Returns the `seq` of the last event handed over (`after` when there was none): where
/// a later walk picks up. An error of the store or of `each` ends the walk.
pub fn walk_events_of_kinds<E: From<StoreError>>(
    store: &dyn Blackboard,
    run: RunId,
    kinds: &[EventKind],
    after: i64,
    each: impl FnMut(Event) -> Result<ControlFlow<()>, E>,
) -> Result<i64, E> {
    walk_events_of_kinds_in_pages(store, run, kinds, after, PAGE, each)
}

/// [`walk_events_of_kinds`], reading `page` events at a time: for a walk that usually stops after a few
/// (a reader of a long log's first lines), where a page of [`PAGE`] would be read and decoded for nothing.
pub fn walk_events_of_kinds_in_pages<E: From<StoreError>>(
    store: &dyn Blackboard,
    run: RunId,
    kinds: &[EventKind],
    mut after: i64,
    page: usize,
    mut each: impl FnMut(Event) -> Result<ControlFlow<()>, E>,
) -> Result<i64, E> {
    let page = page.max(1);
    loop {
        let events = store.events_of_kinds_after(run, kinds, after, page)?;
        // A short page is the end of the log as it stands: no read just to find it empty.
        let full = events.len() == page;
        for event in events {
            after = event.seq;
            if each(event)?.is_break() {
                return Ok(after);
            }
        }
        if !full {
            return Ok(after);
        }
    }
}

/// [`walk_events_of_kinds`] through to the end of the log.
pub fn each_event_of_kinds<E: From<StoreError>>(
    store: &dyn Blackboard,
    run: RunId,
    kinds: &[EventKind],
    after: i64,
    mut each: impl FnMut(Event) -> Result<(), E>,
) -> Result<i64, E> {
    walk_events_of_kinds(store, run, kinds, after, |event| {
        each(event).map(|()| ControlFlow::Continue(()))
    })
}

#[cfg(test)]
mod tests {
    use agency_core::NewEvent;
    use serde_json::json;

    use super::*;
    use crate::{NewRun, SqliteBlackboard};

    /// A walk crosses pages, keeps to its kinds and run, starts after its `seq`, and says where it ended.
    #[test]
    fn walks_every_page_in_order_and_returns_the_last_seq() {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let other = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let mut logged = Vec::new();
        for n in 0..PAGE + 7 {
            let seq = store
                .append_event(NewEvent::log(run, "info", format!("line {n}")))
                .unwrap()
                .seq;
            store
                .append_event(NewEvent::new(run, EventKind::Spawned, json!({})))
                .unwrap();
            store
                .append_event(NewEvent::log(other, "info", "another run"))
                .unwrap();
            logged.push(seq);
        }
        let mut seen = Vec::new();
        let last = each_event_of_kinds::<StoreError>(&store, run, &[EventKind::Log], 0, |event| {
            seen.push(event.seq);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, logged);
        assert_eq!(last, *logged.last().unwrap());
        let again = each_event_of_kinds::<StoreError>(&store, run, &[EventKind::Log], last, |_| {
            panic!("nothing is after the end")
        })
        .unwrap();
        assert_eq!(again, last, "a walk with nothing new stays where it was");
    }

    /// A blackboard with one run of `n` log lines, and their `seq`s.
    fn log_lines(n: usize) -> (SqliteBlackboard, RunId, Vec<i64>) {
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store.create_run(NewRun::new("goal", "/repo")).unwrap().id;
        let seqs = (0..n)
            .map(|i| {
                store
                    .append_event(NewEvent::log(run, "info", format!("line {i}")))
                    .unwrap()
                    .seq
            })
            .collect();
        (store, run, seqs)
    }

    /// A walk that breaks stops at once and returns the `seq` it stopped at.
    #[test]
    fn a_break_stops_the_walk_where_it_is() {
        let (store, run, seqs) = log_lines(5);
        let mut handed = 0;
        let stopped = walk_events_of_kinds::<StoreError>(&store, run, &[EventKind::Log], 0, |event| {
            handed += 1;
            Ok(if event.seq == seqs[2] {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })
        .unwrap();
        assert_eq!((stopped, handed), (seqs[2], 3));
    }

    /// Small pages: the walk crosses them in order (a last page just full is followed by one empty read),
    /// reads no further once it breaks, and a page of 0 reads one at a time rather than never ending.
    #[test]
    fn small_pages_are_crossed_in_order_and_a_break_reads_no_further() {
        let (store, run, seqs) = log_lines(9);
        for page in [0, 1, 3, 4, 9, 20] {
            let mut seen = Vec::new();
            let last = walk_events_of_kinds_in_pages::<StoreError>(
                &store,
                run,
                &[EventKind::Log],
                0,
                page,
                |event| {
                    seen.push(event.seq);
                    Ok(ControlFlow::Continue(()))
                },
            )
            .unwrap();
            assert_eq!(
                (seen.as_slice(), last),
                (seqs.as_slice(), seqs[8]),
                "pages of {page}"
            );
            let mut handed = Vec::new();
            let stopped = walk_events_of_kinds_in_pages::<StoreError>(
                &store,
                run,
                &[EventKind::Log],
                seqs[1],
                page,
                |event| {
                    handed.push(event.seq);
                    Ok(if handed.len() == 4 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    })
                },
            )
            .unwrap();
            assert_eq!(
                (handed.as_slice(), stopped),
                (&seqs[2..6], seqs[5]),
                "pages of {page}"
            );
        }
    }
}
