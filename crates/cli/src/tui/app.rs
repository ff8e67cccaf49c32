//! The terminal `inspect`'s state and what each key does to it, apart from the terminal itself so that tests
//! can press keys and draw onto ratatui's `TestBackend`.

use std::sync::Arc;

use agency_core::GateId;
use agency_core::RunId;
use agency_store::Blackboard;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::tui::model::{self, Item, RunRow, RunView};

/// A decision on the gate a human was shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// `agency approve`.
    Approve,
    /// `agency reject --reason`.
    Reject(String),
}

/// Decides `gate` of `run` as `agency approve` / `agency reject` would, returning the line they print.
pub type Decide<'a> = dyn Fn(RunId, GateId, Decision) -> Result<String, String> + 'a;

/// Which screen is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The runs on the blackboard.
    Runs,
    /// One run's tree beside the selected item's text.
    Run,
}

/// What the bottom line is asking for, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Nothing: keys move and open.
    None,
    /// `y` approves the pending gate.
    ConfirmApprove,
    /// The reason for a rejection, being typed.
    Reason(String),
}

/// Everything the terminal shows.
pub struct App {
    store: Arc<dyn Blackboard>,
    /// The screen that is up.
    pub screen: Screen,
    /// The runs list.
    pub runs: Vec<RunRow>,
    /// The selected line of the runs list.
    pub runs_selected: usize,
    /// The open run.
    pub run: Option<RunView>,
    /// The selected line of the run's tree.
    pub selected: usize,
    /// The selected item's text.
    pub detail: String,
    /// How far the text is scrolled, in lines.
    pub scroll: u16,
    /// Whether the text fills the screen (Enter opens an item, Esc closes it).
    pub zoomed: bool,
    /// What the bottom line asks for.
    pub prompt: Prompt,
    /// The last thing that happened, shown on the bottom line.
    pub message: Option<String>,
    /// Set when the user asked to leave.
    pub quit: bool,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("screen", &self.screen)
            .field("selected", &self.selected)
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Opens on `run` when one is given, else on the runs list.
    pub fn new(store: Arc<dyn Blackboard>, run: Option<RunId>) -> Result<App, agency_store::StoreError> {
        let mut app = App {
            runs: model::runs(&*store)?,
            store,
            screen: Screen::Runs,
            runs_selected: 0,
            run: None,
            selected: 0,
            detail: String::new(),
            scroll: 0,
            zoomed: false,
            prompt: Prompt::None,
            message: None,
            quit: false,
        };
        if let Some(run) = run {
            app.runs_selected = app.runs.iter().position(|r| r.id == run).unwrap_or(0);
            app.open_run(run)?;
        }
        Ok(app)
    }

    fn open_run(&mut self, run: RunId) -> Result<(), agency_store::StoreError> {
        let view = model::run_view(&*self.store, run)?;
        // Open on the gate that waits, when one does: that is what the human came for.
        self.selected = view
            .items
            .iter()
            .position(|i| matches!(i, Item::Gate(g) if Some(g.id) == view.pending.as_ref().map(|p| p.id)))
            .unwrap_or(0);
        self.run = Some(view);
        self.screen = Screen::Run;
        self.zoomed = false;
        self.show_selected();
        Ok(())
    }

    /// The item selected in the open run's tree.
    pub fn selected_item(&self) -> Option<&Item> {
        self.run.as_ref()?.items.get(self.selected)
    }

    fn show_selected(&mut self) {
        self.scroll = 0;
        self.detail = match (&self.run, self.selected_item()) {
            (Some(view), Some(item)) => match model::detail(&*self.store, view, item) {
                Ok(text) => text,
                Err(e) => format!("could not read it from the blackboard: {e}"),
            },
            _ => String::new(),
        };
    }

    /// Reads the blackboard again, keeping the selection on the same run and item.
    pub fn refresh(&mut self) {
        // Whether a runner is attached is asked by taking its lease for an instant: only for what is shown.
        if self.screen == Screen::Runs {
            self.refresh_runs();
        }
        self.refresh_run();
    }

    fn refresh_runs(&mut self) {
        match model::runs(&*self.store) {
            Ok(runs) => {
                let keep = self.runs.get(self.runs_selected).map(|r| r.id);
                self.runs = runs;
                self.runs_selected = keep
                    .and_then(|id| self.runs.iter().position(|r| r.id == id))
                    .unwrap_or(0);
            }
            Err(e) => self.message = Some(format!("could not read the runs: {e}")),
        }
    }

    fn refresh_run(&mut self) {
        let key = self.selected_item().map(Item::key);
        let Some(view) = self.run.as_mut() else { return };
        let items_before = view.items.clone();
        match model::refresh_view(&*self.store, view) {
            Ok(moved) => {
                let selected = key
                    .and_then(|k| view.items.iter().position(|i| i.key() == k))
                    .unwrap_or(self.selected.min(view.items.len().saturating_sub(1)));
                // The text is rendered again only when something it may show changed: a new event, or a
                // brief or gate of the tree that moved. A run that stands still costs no re-render.
                let changed = moved || view.items != items_before || selected != self.selected;
                self.selected = selected;
                if changed {
                    let scroll = self.scroll;
                    self.show_selected();
                    self.scroll = scroll;
                }
            }
            Err(e) => self.message = Some(format!("could not read the run: {e}")),
        }
    }

    /// Acts on one key press.
    pub fn on_key(&mut self, key: KeyEvent, decide: &Decide<'_>) {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        match std::mem::replace(&mut self.prompt, Prompt::None) {
            Prompt::ConfirmApprove => {
                if matches!(key.code, KeyCode::Char('y' | 'Y')) {
                    self.decide(Decision::Approve, decide);
                } else {
                    self.message = Some("not approved".into());
                }
                return;
            }
            Prompt::Reason(mut reason) => {
                match key.code {
                    KeyCode::Esc => self.message = Some("not rejected".into()),
                    KeyCode::Enter if reason.trim().is_empty() => {
                        self.message = Some("a rejection needs a reason: type it, then Enter".into());
                        self.prompt = Prompt::Reason(reason);
                    }
                    KeyCode::Enter => self.decide(Decision::Reject(reason), decide),
                    KeyCode::Backspace => {
                        reason.pop();
                        self.prompt = Prompt::Reason(reason);
                    }
                    KeyCode::Char(c) => {
                        reason.push(c);
                        self.prompt = Prompt::Reason(reason);
                    }
                    _ => self.prompt = Prompt::Reason(reason),
                }
                return;
            }
            Prompt::None => {}
        }
        match self.screen {
            Screen::Runs => self.on_runs_key(key.code),
            Screen::Run => self.on_run_key(key.code),
        }
    }

    fn on_runs_key(&mut self, code: KeyCode) {
        match code {
            KeyCode::Char('q') | KeyCode::Esc => self.quit = true,
            KeyCode::Up | KeyCode::Char('k') => self.runs_selected = self.runs_selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.runs_selected = (self.runs_selected + 1).min(self.runs.len().saturating_sub(1));
            }
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => {
                if let Some(run) = self.runs.get(self.runs_selected).map(|r| r.id)
                    && let Err(e) = self.open_run(run)
                {
                    self.message = Some(format!("could not read run {}: {e}", run.short()));
                }
            }
            _ => {}
        }
    }

    fn on_run_key(&mut self, code: KeyCode) {
        let count = self.run.as_ref().map_or(0, |v| v.items.len());
        match code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Esc | KeyCode::Backspace | KeyCode::Left | KeyCode::Char('h') => {
                if self.zoomed {
                    self.zoomed = false;
                } else {
                    self.screen = Screen::Runs;
                    self.run = None;
                    self.refresh_runs();
                }
            }
            KeyCode::Up | KeyCode::Char('k') if !self.zoomed => {
                self.selected = self.selected.saturating_sub(1);
                self.show_selected();
            }
            KeyCode::Down | KeyCode::Char('j') if !self.zoomed => {
                self.selected = (self.selected + 1).min(count.saturating_sub(1));
                self.show_selected();
            }
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll_by(1),
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => self.zoomed = true,
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll_by(10),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::Home | KeyCode::Char('g') => self.scroll = 0,
            KeyCode::Char('a') => {
                if self.pending_gate().is_some() {
                    self.prompt = Prompt::ConfirmApprove;
                } else {
                    self.message = Some("no gate of this run waits for a decision".into());
                }
            }
            KeyCode::Char('r') => {
                if self.pending_gate().is_some() {
                    self.prompt = Prompt::Reason(String::new());
                } else {
                    self.message = Some("no gate of this run waits for a decision".into());
                }
            }
            _ => {}
        }
    }

    fn scroll_by(&mut self, lines: u16) {
        let last = u16::try_from(self.detail.lines().count().saturating_sub(1)).unwrap_or(u16::MAX);
        self.scroll = self.scroll.saturating_add(lines).min(last);
    }

    /// The gate `agency approve` would decide on the open run.
    pub fn pending_gate(&self) -> Option<&agency_core::gate::Gate> {
        self.run.as_ref()?.pending.as_ref()
    }

    fn decide(&mut self, decision: Decision, decide: &Decide<'_>) {
        let Some((run, gate)) = self
            .run
            .as_ref()
            .and_then(|v| Some((v.run.id, v.pending.as_ref()?.id)))
        else {
            self.message = Some("no gate of this run waits for a decision".into());
            return;
        };
        self.message = Some(match decide(run, gate, decision) {
            Ok(line) => line,
            Err(e) => format!("error: {e}"),
        });
        self.refresh();
    }
}
