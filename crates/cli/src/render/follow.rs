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
use agency_store::{Blackboard, StoreError};

use crate::render::log::{Level, render_event};

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

/// A run's live log being written to `out`. It keeps its place, so a follow that stopped on an error can be
/// started again and goes on where it stopped, printing no line twice.
#[derive(Debug)]
pub struct Follower<W> {
    run: RunId,
    level: Level,
    out: W,
    /// The sequence number of the last event read.
    after: i64,
}

impl<W: Write> Follower<W> {
    /// A follower of `run` from its first event.
    pub fn new(run: RunId, level: Level, out: W) -> Follower<W> {
        Follower {
            run,
            level,
            out,
            after: 0,
        }
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
                    writeln!(self.out, "{line}")?;
                }
            }
            if events.len() == PAGE {
                continue;
            }
            self.out.flush()?;
            if last {
                return Ok(());
            }
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
pub fn beside_runner(
    open: impl Fn() -> Result<Arc<dyn Blackboard>, StoreError>,
    run: RunId,
    level: Level,
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

    use agency_core::{EventKind, NewEvent};
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
                beside_runner(open, run, Level::Normal, &done, POLL, out, err);
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
                beside_runner(open, run, Level::Normal, &done, POLL, Vec::new(), err);
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
                beside_runner(open, run, Level::Normal, &done, POLL, writer, err);
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
