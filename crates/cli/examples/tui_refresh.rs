//! What the terminal `inspect`'s once-a-second refresh costs on a big run: a SQLite blackboard with
//! `BRIEFS` T4 briefs (default 1,000, in workstreams of 50) and `EVENTS_PER_BRIEF` events each (default 10:
//! nine log lines and one model call), the inspector open on the run with its cost selected (the text that
//! reads every event).
//!
//! It times, `ROUNDS` times each (20), the median and the slowest:
//!
//! - **whole read**: the run read from its first event and the selected text rendered again, which is what
//!   every refresh did before refreshes were incremental (`tui::model::run_view` + `tui::model::detail`);
//! - **refresh, nothing new**: `App::refresh` on a run that stands still;
//! - **refresh, 10 new events**: `App::refresh` after ten events were written (the writes not timed).
//!
//!   cargo run --release -p agency-cli --example tui_refresh [BRIEFS] [EVENTS_PER_BRIEF] [ROUNDS]

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agency_cli::tui::app::{App, Decision};
use agency_cli::tui::model::{self, Item};
use agency_core::brief::{BriefPlacement, NewBrief};
use agency_core::event::{EventKind, NewEvent};
use agency_core::{BriefId, GateId, RunId, Tier};
use agency_store::{Blackboard, NewRun, SqliteBlackboard};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

fn usage(run: RunId, brief: BriefId) -> NewEvent {
    NewEvent::new(
        run,
        EventKind::Usage,
        json!({ "model": "m", "provider": "p", "input_tokens": 1200, "output_tokens": 300,
                "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.0123 }),
    )
    .brief(brief)
    .tier(Tier::T4)
}

fn log(run: RunId, brief: BriefId, n: usize) -> NewEvent {
    NewEvent::new(
        run,
        EventKind::Log,
        json!({ "level": "info", "message": format!("tool call {n}: Write src/file_{n}.rs") }),
    )
    .brief(brief)
    .tier(Tier::T4)
}

fn no_decision(_: RunId, _: GateId, _: Decision) -> Result<String, String> {
    Err("the bench decides nothing".into())
}

/// The median and the slowest of `rounds` timings of `f`.
fn time(rounds: usize, mut f: impl FnMut() -> Duration) -> (Duration, Duration) {
    let mut took: Vec<Duration> = (0..rounds).map(|_| f()).collect();
    took.sort_unstable();
    (took[rounds / 2], took[rounds - 1])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let briefs: usize = args
        .next()
        .map_or(1_000, |a| a.parse().expect("BRIEFS: a number"));
    let per_brief: usize = args
        .next()
        .map_or(10, |a| a.parse().expect("EVENTS_PER_BRIEF: a number"));
    let rounds: usize = args.next().map_or(20, |a| a.parse().expect("ROUNDS: a number"));
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteBlackboard::open(dir.path().join("agency.db")).unwrap());
    let run = store
        .create_run(NewRun::new(
            "bench the inspector",
            dir.path().display().to_string(),
        ))
        .unwrap()
        .id;
    let seeding = Instant::now();
    let mut last = BriefId::new();
    for n in 0..briefs {
        let brief = NewBrief {
            tier: Tier::T4,
            workstream: format!("ws-{:03}", n / 50),
            title: format!("task {n}"),
            personality: None,
            instructions: String::new(),
            inputs: Vec::new(),
            variety: None,
            contract: None,
            depends_on: Vec::new(),
        }
        .into_brief(BriefPlacement {
            id: BriefId::new(),
            run,
            parent: None,
            goal_anchor: "bench".into(),
            retry_budget: 0,
            depends_on: Vec::new(),
            created_at: chrono::Utc::now(),
        });
        store.insert_brief(&brief).unwrap();
        for e in 0..per_brief.saturating_sub(1) {
            store.append_event_soon(log(run, brief.id, e)).unwrap();
        }
        store.append_event(usage(run, brief.id)).unwrap();
        last = brief.id;
    }
    store.flush_events().unwrap();
    let events = store.events_after(Some(run), 0, usize::MAX).unwrap().len();
    eprintln!(
        "seeded {briefs} briefs, {events} events in {:.1} s",
        seeding.elapsed().as_secs_f64()
    );

    let shared: Arc<dyn Blackboard> = store.clone();
    let mut app = App::new(shared.clone(), Some(run)).unwrap();
    while !matches!(app.selected_item(), Some(Item::Cost)) {
        app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE), &no_decision);
    }

    let whole = time(rounds, || {
        let start = Instant::now();
        let view = model::run_view(&*shared, run).unwrap();
        let text = model::detail(&*shared, &view, &Item::Cost).unwrap();
        let took = start.elapsed();
        assert!(text.contains("total"));
        took
    });
    let still = time(rounds, || {
        let start = Instant::now();
        app.refresh();
        start.elapsed()
    });
    let mut written = 0;
    let moving = time(rounds, || {
        for n in 0..10 {
            store.append_event(log(run, last, n)).unwrap();
        }
        written += 10;
        let start = Instant::now();
        app.refresh();
        start.elapsed()
    });
    let held = app.run.as_ref().map_or(0, |v| v.events.len());
    assert_eq!(held, events + written, "the refreshes missed events");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("events {events}  briefs {briefs}  rounds {rounds}");
    println!(
        "whole read + render (each refresh before)   median {:8.2} ms   max {:8.2} ms",
        ms(whole.0),
        ms(whole.1)
    );
    println!(
        "refresh, nothing new                        median {:8.2} ms   max {:8.2} ms",
        ms(still.0),
        ms(still.1)
    );
    println!(
        "refresh, 10 new events                      median {:8.2} ms   max {:8.2} ms",
        ms(moving.0),
        ms(moving.1)
    );
}
