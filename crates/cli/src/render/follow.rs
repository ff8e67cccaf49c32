//! Following a run's live log as the blackboard fills: `agency watch [--follow]`, and the log `agency run`
//! and `agency demo` print beside the runner. Events are read page by page from the last one printed, so a
//! long run is streamed rather than loaded whole, and any process may be writing them.
//!
//! [`Follower`] is the tail itself; what ends it is the caller's (the run's status for `watch`, the runner's
//! own flag for `run`), and so is what a failure means: `watch` stops with the error, while the log beside a
//! runner ([`beside_runner`]) is only a view of the run and must neither stop it nor fall silent.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agency_core::RunId;
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::gate::{Gate, GateKind, GateStatus};
use agency_store::{Blackboard, StoreError};
use chrono::{DateTime, Utc};

use crate::render::log::{Level, MESSAGE_COLUMN, render_event};
use crate::render::review::decision_commands;

/// Events read per page.
const PAGE: usize = 500;

/// Why a follow stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// The blackboard could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The log could not be written.
    #[error("cannot write the live log: {0}")]
    Write(#[from] std::io::Error),
}

/// How a log beside the runner treats gates that wait for a human: it follows each one's line with the
/// commands that decide it, and says that the run is waiting, how long it has, without flooding a log file.
#[derive(Debug, Clone)]
pub struct GateWait {
    /// The runner approves every gate but a budget or an escalation by itself (`--auto-approve`).
    pub auto_approve: bool,
    /// A gate left undecided this long is rejected by the runner (`visibility.gate_timeout_minutes`).
    pub timeout: chrono::Duration,
    /// The log goes to a terminal: the waiting line is one line rewritten in place. Otherwise a line is
    /// written every `every`.
    pub tty: bool,
    /// How often a log that is not a terminal says the run still waits.
    pub every: Duration,
}

impl GateWait {
    /// A gate of `kind` waits for a human here (a pause is released with `agency resume`, and its line says so).
    fn for_a_human(&self, kind: GateKind) -> bool {
        match kind {
            GateKind::Pause => false,
            _ if kind.needs_a_human() => true,
            _ => !self.auto_approve,
        }
    }
}

/// How often a waiting line on a terminal is brought up to date.
const TTY_REFRESH: Duration = Duration::from_secs(1);

/// Where the log stands on the gate it is waiting at.
#[derive(Debug, Default)]
struct Waiting {
    /// A waiting line is on the terminal, without its newline: clear it before the next line.
    shown: bool,
    /// When the waiting was last checked and last written.
    checked: Option<std::time::Instant>,
    written: Option<std::time::Instant>,
}

/// "1h02m", "3m12s", "9s".
fn span(d: chrono::Duration) -> String {
    let secs = d.num_seconds().max(0);
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// A run's live log being written to `out`. It keeps its place, so a follow that stopped on an error can be
/// started again and goes on where it stopped, printing no line twice.
#[derive(Debug)]
pub struct Follower<W> {
    run: RunId,
    level: Level,
    out: W,
    /// The sequence number of the last event read.
    after: i64,
    /// Gates that wait for a human are followed by how to decide them, when set.
    gates: Option<GateWait>,
    waiting: Waiting,
}

impl<W: Write> Follower<W> {
    /// A follower of `run` from its first event.
    pub fn new(run: RunId, level: Level, out: W) -> Follower<W> {
        Follower {
            run,
            level,
            out,
            after: 0,
            gates: None,
            waiting: Waiting::default(),
        }
    }

    /// Follows each gate that waits for a human with the commands that decide it, and says while the run
    /// waits ([`GateWait`]).
    pub fn with_gates(mut self, gates: GateWait) -> Follower<W> {
        self.gates = Some(gates);
        self
    }

    /// The lines under a `gate_pending` line: the commands that decide the gate, when it waits for a human
    /// (not when the runner decides it itself). Indented to the message column, so the log still reads as one line per event.
    fn decision_lines(&self, store: &dyn Blackboard, event: &Event) -> Result<Vec<String>, StoreError> {
        let Some(gates) = &self.gates else {
            return Ok(Vec::new());
        };
        let gate = match event.typed() {
            Ok(EventPayload::GatePending(opened)) => opened.gate,
            _ => None,
        };
        let Some(gate) = gate else {
            return Ok(Vec::new());
        };
        let gate = store.get_gate(gate)?;
        let pad = " ".repeat(MESSAGE_COLUMN);
        // Every gate of an unconfined run says so, whoever decides it.
        let mut lines = Vec::new();
        if agency_core::config::sandbox_off_in(&store.get_run(self.run)?.config) {
            lines.push(format!("{pad}{}", agency_core::config::SANDBOX_OFF_BANNER));
        }
        // Decided already by the time its line is read (a quick human, a test) is no reason to leave out how
        // it is decided; only a gate the runner decides itself (`--auto-approve`) needs no one.
        let decided_by_runner =
            gate.status != GateStatus::Pending && gate.decided_by.as_deref() == Some("auto");
        if decided_by_runner || !gates.for_a_human(gate.kind) {
            return Ok(lines);
        }
        let run8 = self.run.short();
        let commands = decision_commands(&run8, gate.kind);
        if let Some((review, decide)) = commands.split_first() {
            lines.push(format!("{pad}review:  {review}"));
            lines.push(format!("{pad}decide:  {}", decide.join("   or   ")));
        }
        Ok(lines)
    }

    /// Clears a waiting line left on the terminal, so the next log line starts on a clean line.
    fn clear_waiting(&mut self) -> std::io::Result<()> {
        if std::mem::replace(&mut self.waiting.shown, false) {
            write!(self.out, "\r\x1b[2K")?;
        }
        Ok(())
    }

    /// Says that the run waits at a gate for a human, when it does: on a terminal one line rewritten in
    /// place every second; otherwise a line every [`GateWait::every`] (none right after the gate's own line).
    fn say_waiting(&mut self, store: &dyn Blackboard, now: DateTime<Utc>) -> Result<(), FollowError> {
        let Some(gates) = self.gates.clone() else {
            return Ok(());
        };
        let at = std::time::Instant::now();
        let refresh = if gates.tty {
            TTY_REFRESH
        } else {
            gates.every.min(TTY_REFRESH)
        };
        if self
            .waiting
            .checked
            .is_some_and(|c| at.duration_since(c) < refresh)
        {
            return Ok(());
        }
        self.waiting.checked = Some(at);
        let waiting: Option<Gate> = store
            .pending_gates(Some(self.run))?
            .into_iter()
            .filter(|g| gates.for_a_human(g.kind))
            .min_by_key(|g| g.opened_at);
        let Some(gate) = waiting else {
            self.clear_waiting()?;
            self.waiting.written = None;
            return Ok(());
        };
        let elapsed = now - gate.opened_at;
        let left = gates.timeout - elapsed;
        // Short enough for one terminal row, which is all `\r` rewrites.
        let line = format!(
            "⏸  waiting {} for a decision on the {} gate; rejected automatically in {}",
            span(elapsed),
            gate.kind,
            span(left),
        );
        if gates.tty {
            write!(self.out, "\r\x1b[2K{line}")?;
            self.out.flush()?;
            self.waiting.shown = true;
            return Ok(());
        }
        let Some(written) = self.waiting.written else {
            // The gate's own line has just said it waits.
            self.waiting.written = Some(at);
            return Ok(());
        };
        if at.duration_since(written) >= gates.every {
            let time = now.format("%H:%M:%S");
            writeln!(
                self.out,
                "[{}] {time}  GATE WAITING       {line}",
                self.run.short()
            )?;
            self.out.flush()?;
            self.waiting.written = Some(at);
        }
        Ok(())
    }

    /// Prints the run's events from where it got to until `finished` says the run is over, waiting `poll`
    /// whenever it has caught up. `finished` is asked before each page, so the page read after it first says
    /// yes is the last one, and it holds everything written before that answer.
    pub fn follow(
        &mut self,
        store: &dyn Blackboard,
        poll: Duration,
        mut finished: impl FnMut() -> Result<bool, StoreError>,
    ) -> Result<(), FollowError> {
        loop {
            let last = finished()?;
            let events = store.events_after(Some(self.run), self.after, PAGE)?;
            for event in &events {
                self.after = event.seq;
                if let Some(line) = render_event(event, self.level) {
                    self.clear_waiting()?;
                    writeln!(self.out, "{line}")?;
                    if event.kind == EventKind::GatePending {
                        for hint in self.decision_lines(store, event)? {
                            writeln!(self.out, "{hint}")?;
                        }
                    }
                }
            }
            if events.len() == PAGE {
                continue;
            }
            if last {
                self.clear_waiting()?;
                self.out.flush()?;
                return Ok(());
            }
            self.say_waiting(store, Utc::now())?;
            self.out.flush()?;
            std::thread::sleep(poll);
        }
    }
}

/// Prints the live log of `run` to `out` while a runner drives it, until `done` is set, on a blackboard
/// handle of its own (`open`), so reading the log never waits on the runner's.
///
/// The log is only a view of the run, so nothing that goes wrong here stops the run, and nothing goes
/// unsaid: a blackboard that cannot be opened or read is said once on `err` and tried again every `poll`
/// (the log then goes on where it stopped; if the runner finishes first, it ends there); a log that cannot
/// be written (its reader went away) is said once and ends.
#[allow(clippy::too_many_arguments)]
pub fn beside_runner(
    open: impl Fn() -> Result<Arc<dyn Blackboard>, StoreError>,
    run: RunId,
    level: Level,
    gates: Option<GateWait>,
    done: &AtomicBool,
    poll: Duration,
    out: impl Write,
    mut err: impl Write,
) {
    let mut unreadable = Unreadable::default();
    let store = loop {
        // Read before each try, so a failure once the runner has finished ends the log instead of retrying.
        let finished = done.load(Ordering::SeqCst);
        match open() {
            Ok(store) => break store,
            Err(e) => unreadable.say_once(&mut err, &e),
        }
        if finished {
            return;
        }
        std::thread::sleep(poll);
    };
    let mut follower = Follower::new(run, level, out);
    if let Some(gates) = gates {
        follower = follower.with_gates(gates);
    }
    loop {
        let finished = done.load(Ordering::SeqCst);
        match follower.follow(store.as_ref(), poll, || Ok(done.load(Ordering::SeqCst))) {
            Ok(()) => return,
            Err(FollowError::Store(e)) => unreadable.say_once(&mut err, &e),
            Err(FollowError::Write(e)) => {
                let _ = writeln!(
                    err,
                    "warning: the live log stopped, it cannot be written: {e}; the run goes on (`agency watch {}` shows its log)",
                    run.short()
                );
                return;
            }
        }
        if finished {
            return;
        }
        std::thread::sleep(poll);
    }
}

/// Whether the live log has said that it cannot read the blackboard: once is enough, however long the
/// blackboard stays away.
#[derive(Debug, Default)]
struct Unreadable {
    said: bool,
}

impl Unreadable {
    fn say_once(&mut self, err: &mut impl Write, error: &StoreError) {
        if std::mem::replace(&mut self.said, true) {
            return;
        }
        // A warning that cannot be written has nowhere else to go.
        let _ = writeln!(
            err,
            "warning: the live log cannot read the blackboard: {error}; the run goes on, and the log goes on \
             where it stopped once the blackboard answers"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Instant;

    use agency_core::NewEvent;
    use agency_store::{NewRun, SqliteBlackboard};
    use serde_json::json;
    use tempfile::TempDir;

    use super::*;

    const POLL: Duration = Duration::from_millis(5);

    /// A blackboard in a temporary directory with one run on it.
    fn board() -> (TempDir, Arc<SqliteBlackboard>, RunId) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteBlackboard::open(dir.path().join("agency.db")).unwrap());
        let run = store.create_run(NewRun::new("a goal", "/repo")).unwrap().id;
        (dir, store, run)
    }

    /// Appends `count` tier-level log lines `step FIRST` … to the run.
    fn steps(store: &SqliteBlackboard, run: RunId, first: usize, count: usize) {
        for i in first..first + count {
            let payload = json!({ "level": "normal", "tag": "STEP", "message": format!("step {i}") });
            store
                .append_event(NewEvent::new(run, EventKind::Log, payload))
                .unwrap();
        }
    }

    /// The `step N` numbers printed, in order.
    fn printed(text: &str) -> Vec<usize> {
        text.lines()
            .filter_map(|l| l.split("step ").nth(1))
            .map(|n| n.parse().unwrap())
            .collect()
    }

    /// What a writer wrote, readable while another thread writes it.
    #[derive(Debug, Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !check() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            thread::sleep(POLL);
        }
    }

    /// Follows `run` with `gates` for `for_how_long`, then once more to its end; returns what was written.
    fn follow_with_gates(
        store: &SqliteBlackboard,
        run: RunId,
        gates: GateWait,
        for_how_long: Duration,
    ) -> String {
        let start = Instant::now();
        let mut out = Vec::new();
        Follower::new(run, Level::Normal, &mut out)
            .with_gates(gates)
            .follow(store, POLL, || Ok(start.elapsed() > for_how_long))
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn plan_gate(store: &SqliteBlackboard, run: RunId) {
        let summary = json!({ "message": "Waiting on approval before T2 spawns" });
        store
            .open_gate(agency_store::NewGate::new(run, GateKind::T1Plan, summary))
            .unwrap();
    }

    fn waiting(tty: bool, auto_approve: bool) -> GateWait {
        GateWait {
            auto_approve,
            timeout: chrono::Duration::minutes(60),
            tty,
            every: Duration::from_millis(30),
        }
    }

    #[test]
    fn a_gate_waiting_for_a_human_is_followed_by_its_commands_and_a_waiting_line_now_and_then() {
        let (_dir, store, run) = board();
        plan_gate(&store, run);
        let text = follow_with_gates(&store, run, waiting(false, false), Duration::from_millis(300));
        let run8 = run.short();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].ends_with("GATE APPROVAL      ⏸  Waiting on approval before T2 spawns"),
            "{text}"
        );
        assert_eq!(lines[1].trim(), format!("review:  agency show {run8} plan"));
        assert_eq!(
            lines[2].trim(),
            format!("decide:  agency approve {run8}   or   agency reject {run8} --reason \"…\"")
        );
        let waiting: Vec<&&str> = lines.iter().filter(|l| l.contains("GATE WAITING")).collect();
        assert!(!waiting.is_empty(), "{text}");
        assert!(
            waiting[0]
                .contains("⏸  waiting 0s for a decision on the t1_plan gate; rejected automatically in 59m"),
            "{text}"
        );
        assert!(
            !text.contains('\r'),
            "no in-place rewriting off a terminal:\n{text}"
        );
    }

    #[test]
    fn on_a_terminal_the_waiting_line_is_rewritten_in_place_and_cleared_before_the_next_line() {
        let (_dir, store, run) = board();
        plan_gate(&store, run);
        let text = follow_with_gates(&store, run, waiting(true, false), Duration::from_millis(200));
        assert!(
            text.contains("\r\x1b[2K⏸  waiting 0s for a decision on the t1_plan gate"),
            "{text:?}"
        );
        assert!(
            text.ends_with("\r\x1b[2K"),
            "the log ends on a clean line: {text:?}"
        );
        assert!(!text.contains("GATE WAITING"), "{text:?}");
    }

    #[test]
    fn a_gate_the_runner_approves_by_itself_gets_no_commands_and_no_waiting_line() {
        let (_dir, store, run) = board();
        plan_gate(&store, run);
        let text = follow_with_gates(&store, run, waiting(false, true), Duration::from_millis(200));
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    #[test]
    fn a_follow_that_is_finished_at_once_prints_every_page_once() {
        let (_dir, store, run) = board();
        steps(&store, run, 0, 2 * PAGE + 1);
        let mut out = Vec::new();
        Follower::new(run, Level::Normal, &mut out)
            .follow(store.as_ref(), POLL, || Ok(true))
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(printed(&text), (0..2 * PAGE + 1).collect::<Vec<_>>());
        assert!(text.lines().all(|l| l.contains("  RUN  STEP ")), "{text}");
    }

    #[test]
    fn everything_written_before_the_run_finished_is_printed() {
        let (_dir, store, run) = board();
        let finished = Arc::new(AtomicBool::new(false));
        let writer = {
            let (store, finished) = (store.clone(), finished.clone());
            thread::spawn(move || {
                for i in 0..40 {
                    steps(&store, run, i * 10, 10);
                    thread::sleep(Duration::from_millis(1));
                }
                finished.store(true, Ordering::SeqCst);
            })
        };
        let mut out = Vec::new();
        Follower::new(run, Level::Normal, &mut out)
            .follow(store.as_ref(), POLL, || Ok(finished.load(Ordering::SeqCst)))
            .unwrap();
        writer.join().unwrap();
        assert_eq!(
            printed(&String::from_utf8(out).unwrap()),
            (0..400).collect::<Vec<_>>()
        );
    }

    #[test]
    fn beside_a_runner_an_unreadable_blackboard_is_said_once_and_the_log_goes_on_where_it_stopped() {
        let (dir, store, run) = board();
        let path = dir.path().join("agency.db");
        steps(&store, run, 0, 3);
        let done = Arc::new(AtomicBool::new(false));
        let (out, err) = (Shared::default(), Shared::default());
        let printer = {
            let (done, out, err, path) = (done.clone(), out.clone(), err.clone(), path.clone());
            thread::spawn(move || {
                let open = || SqliteBlackboard::open(&path).map(|s| Arc::new(s) as Arc<dyn Blackboard>);
                beside_runner(open, run, Level::Normal, None, &done, POLL, out, err);
            })
        };
        wait_until("the first lines", || printed(&out.text()).len() == 3);
        // The events table goes away for a while (another process's doing), as a real read error.
        let admin = rusqlite::Connection::open(&path).unwrap();
        admin
            .execute_batch("ALTER TABLE events RENAME TO events_away")
            .unwrap();
        wait_until("the warning", || !err.text().is_empty());
        thread::sleep(POLL * 10);
        admin
            .execute_batch("ALTER TABLE events_away RENAME TO events")
            .unwrap();
        steps(&store, run, 3, 2);
        done.store(true, Ordering::SeqCst);
        printer.join().unwrap();

        assert_eq!(printed(&out.text()), [0, 1, 2, 3, 4]);
        let warning = err.text();
        assert_eq!(warning.lines().count(), 1, "{warning}");
        assert!(
            warning.starts_with("warning: the live log cannot read the blackboard: ")
                && warning.contains("events")
                && warning.contains("the run goes on"),
            "{warning}"
        );
    }

    #[test]
    fn beside_a_runner_a_blackboard_that_never_opens_is_said_once_and_the_log_ends_with_the_run() {
        let (dir, _store, run) = board();
        let done = Arc::new(AtomicBool::new(false));
        let err = Shared::default();
        let printer = {
            let (done, err, path) = (done.clone(), err.clone(), dir.path().to_path_buf());
            thread::spawn(move || {
                // A directory is no database file.
                let open = || SqliteBlackboard::open(&path).map(|s| Arc::new(s) as Arc<dyn Blackboard>);
                beside_runner(open, run, Level::Normal, None, &done, POLL, Vec::new(), err);
            })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while err.text().is_empty() && Instant::now() < deadline {
            thread::sleep(POLL);
        }
        thread::sleep(POLL * 10);
        done.store(true, Ordering::SeqCst);
        printer.join().unwrap();
        let warning = err.text();
        assert_eq!(warning.lines().count(), 1, "{warning}");
        assert!(warning.contains("cannot read the blackboard"), "{warning}");
    }

    #[test]
    fn beside_a_runner_a_log_whose_reader_went_away_says_so_and_ends_while_the_run_goes_on() {
        let (_dir, store, run) = board();
        steps(&store, run, 0, 3);
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let err = Shared::default();
        let (ended, has_ended) = mpsc::channel();
        let printer = {
            let (store, err) = (store.clone(), err.clone());
            thread::spawn(move || {
                // The runner never finishes here: the log must end on its own.
                let done = AtomicBool::new(false);
                let open = || Ok(store.clone() as Arc<dyn Blackboard>);
                beside_runner(open, run, Level::Normal, None, &done, POLL, writer, err);
                ended.send(()).unwrap();
            })
        };
        has_ended
            .recv_timeout(Duration::from_secs(20))
            .expect("the live log did not end when its reader went away");
        printer.join().unwrap();
        let warning = err.text();
        assert_eq!(warning.lines().count(), 1, "{warning}");
        assert!(
            warning.starts_with("warning: the live log stopped, it cannot be written: ")
                && warning.contains(&format!("`agency watch {}`", run.short())),
            "{warning}"
        );
    }
}
