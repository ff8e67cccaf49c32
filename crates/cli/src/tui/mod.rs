//! The terminal `agency inspect` (seed 001's interactive inspector): the runs, a run's tree of workstreams
//! and briefs with their status, the selected brief whole (teachback history, verify output, the judge's
//! verdict, its slice's diff), the gate that waits with what it asks, and the cost. It looks at the blackboard
//! again every second, so it follows a live run: the events written since its last look are read and added to
//! those it holds ([`model::refresh_view`]), and the selected text is rendered again only when something
//! moved. On a run of 11,000 events that is about 12 ms a look instead of 356 ms (debug build, loaded
//! machine; `bench/tui/run.sh`, docs/performance.md).
//!
//! A gate is decided from the keyboard through [`crate::commands::approve::approve_pending`] and
//! [`crate::commands::reject::reject_pending`], the calls `agency approve` and `agency reject` make: the
//! same checks, and the decision signed with the same identity ([`crate::commands::decider`]).
//!
//! The texts come from `agency-review`, as `agency show`'s and the dashboard's do ([`model`]); what each key
//! does is in [`app`], the drawing in [`view`].

pub mod app;
pub mod model;
pub mod view;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agency_store::Blackboard;
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::commands::Context;
use crate::error::{CommandError, CommandResult};
use crate::tui::app::{App, Decision};

/// How often the blackboard is read again while the user does nothing.
const REFRESH: Duration = Duration::from_secs(1);

/// Runs the terminal inspector until the user quits, opening on `run` when one is given.
pub fn run(ctx: &Context, store: Arc<dyn Blackboard>, run: Option<agency_core::RunId>) -> CommandResult {
    let mut app = App::new(store.clone(), run)?;
    let decide = |run, gate, decision: Decision| -> Result<String, String> {
        let decided = match decision {
            Decision::Approve => {
                crate::commands::approve::approve_pending(ctx, &*store, run, Some(gate), None)
            }
            Decision::Reject(reason) => {
                crate::commands::reject::reject_pending(ctx, &*store, run, Some(gate), reason)
            }
        };
        decided.map_err(|e| e.message)
    };
    // `try_init` enters the alternate screen in raw mode and restores the terminal should anything panic.
    let mut terminal = ratatui::try_init()
        .map_err(|e| CommandError::internal(format!("could not set up the terminal: {e}")))?;
    let looped = event_loop(&mut terminal, &mut app, &decide);
    let restored = ratatui::try_restore();
    looped?;
    restored.map_err(|e| CommandError::internal(format!("could not restore the terminal: {e}")))
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    decide: &app::Decide<'_>,
) -> CommandResult {
    let mut read_at = Instant::now();
    loop {
        terminal.draw(|frame| view::draw(frame, app))?;
        if app.quit {
            return Ok(());
        }
        let wait = REFRESH.saturating_sub(read_at.elapsed());
        if event::poll(wait)?
            && let Event::Key(key) = event::read()?
            && key.kind == KeyEventKind::Press
        {
            app.on_key(key, decide);
        }
        if read_at.elapsed() >= REFRESH {
            app.refresh();
            read_at = Instant::now();
        }
    }
}
