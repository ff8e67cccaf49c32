//! The terminal `agency inspect`, driven in a pseudo-terminal as a human drives it: `script` (util-linux)
//! gives it a pty of a fixed size, the test types keys into it and reads the screen back through a small
//! emulator of the sequences ratatui's crossterm backend writes (cursor moves, clears, colours).
//!
//! Over a scripted run waiting at its plan gate: the gate and the plan's verify command are on screen, `a`
//! then `y` approves it as `agency approve` would (signed by the OS user); once the run has finished, moving
//! to the failed slice and opening it shows the judge's verdict; `q` ends it with status 0.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agency_cli::tui::model::{self, Item};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::{BriefStatus, Tier};
use agency_store::Blackboard;

use crate::show::{approve_to_the_end, run_waiting_at_the_plan_gate};
use crate::support::{Repo, decider};

const COLUMNS: usize = 150;
const ROWS: usize = 45;

/// What a terminal of [`COLUMNS`] × [`ROWS`] shows after the bytes written so far.
struct Screen {
    cells: Vec<Vec<char>>,
    row: usize,
    col: usize,
}

impl Screen {
    fn new() -> Screen {
        Screen {
            cells: vec![vec![' '; COLUMNS]; ROWS],
            row: 0,
            col: 0,
        }
    }

    /// Applies `bytes`: printable characters at the cursor, `ESC [ r ; c H` moves, `ESC [ 2 J` clears; the
    /// other sequences (colours, modes, cursor visibility) change nothing that is read here.
    fn feed(&mut self, text: &str) {
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => {
                    if chars.peek() != Some(&'[') {
                        chars.next();
                        continue;
                    }
                    chars.next();
                    let mut params = String::new();
                    let mut last = ' ';
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            last = c;
                            break;
                        }
                        params.push(c);
                    }
                    let numbers: Vec<usize> = params
                        .trim_start_matches('?')
                        .split(';')
                        .map(|n| n.parse().unwrap_or(1))
                        .collect();
                    match last {
                        'H' | 'f' => {
                            self.row = numbers
                                .first()
                                .copied()
                                .unwrap_or(1)
                                .saturating_sub(1)
                                .min(ROWS - 1);
                            self.col = numbers
                                .get(1)
                                .copied()
                                .unwrap_or(1)
                                .saturating_sub(1)
                                .min(COLUMNS - 1);
                        }
                        'J' if params == "2" => self.cells = vec![vec![' '; COLUMNS]; ROWS],
                        _ => {}
                    }
                }
                '\r' => self.col = 0,
                '\n' => self.row = (self.row + 1).min(ROWS - 1),
                c if c.is_control() => {}
                c => {
                    if self.col < COLUMNS {
                        self.cells[self.row][self.col] = c;
                    }
                    self.col += 1;
                }
            }
        }
    }

    fn text(&self) -> String {
        self.cells
            .iter()
            .map(|row| row.iter().collect::<String>().trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `agency inspect <args>` in a pty, with what it has written so far.
struct Tui {
    child: Child,
    keys: ChildStdin,
    output: Arc<Mutex<String>>,
}

impl Tui {
    fn start(repo: &Repo, args: &str) -> Tui {
        let agency = env!("CARGO_BIN_EXE_agency");
        let mut child = Command::new("script")
            .args([
                "-q",
                "-e",
                "-f",
                "-c",
                &format!("stty cols {COLUMNS} rows {ROWS}; exec {agency} inspect {args}"),
                "/dev/null",
            ])
            .current_dir(repo.path())
            .env_remove("AGENCY_DB")
            .env_remove("AGENCY_CONFIG")
            .env("SHELL", "/bin/sh")
            .env("TERM", "xterm-256color")
            .env("USER", "tester")
            .env("LOGNAME", "tester")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script (util-linux) runs");
        let keys = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Tui { child, keys, output }
    }

    fn screen(&self) -> String {
        let mut screen = Screen::new();
        screen.feed(&self.output.lock().unwrap());
        screen.text()
    }

    /// Waits until the screen shows every one of `texts`.
    fn wait_for(&self, texts: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if texts.iter().all(|t| screen.contains(t)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {texts:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn press(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
        self.keys.flush().unwrap();
        // One key per read: crossterm tells Esc from an escape sequence by what arrives together.
        std::thread::sleep(Duration::from_millis(150));
    }

    fn quit(mut self) {
        self.press("q");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert_eq!(status.code(), Some(0), "{}", self.screen());
                return;
            }
            assert!(Instant::now() < deadline, "q did not end it:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

const DOWN: &str = "\x1b[B";

#[test]
fn inspect_in_a_terminal_approves_the_plan_gate_and_opens_a_failed_slice_to_its_verdict() {
    let (repo, runner, store, run) = run_waiting_at_the_plan_gate();
    let run8 = run.short();

    let mut tui = Tui::start(&repo, &run8);
    // It opens on the gate that waits, whose text is the plan with its verify commands.
    let screen = tui.wait_for(&[
        &format!("Run {run8}"),
        "GATE t1_plan waiting since",
        "verify         sh test_arith.sh",
        "a approve · r reject",
    ]);
    assert!(screen.contains("Plan (T1)"), "{screen}");
    tui.press("a");
    tui.wait_for(&[&format!("approve gate t1_plan as {}?", decider())]);
    tui.press("y");
    tui.wait_for(&[&format!("approved  gate t1_plan of run {run8}")]);
    let plan_gate = store
        .list_gates_of_kind(run, GateKind::T1Plan)
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    assert_eq!(plan_gate.status, GateStatus::Approved);
    assert_eq!(plan_gate.decided_by.as_deref(), Some(decider().as_str()));
    tui.quit();

    let (code, output) = approve_to_the_end(&repo, runner, &store, run);
    assert_eq!(code, Some(0), "{output}");

    // Where the failed first attempt of fix-mul is in the tree, as the inspector lists it.
    let view = model::run_view(&store, run).unwrap();
    let failed = view
        .items
        .iter()
        .position(|item| {
            matches!(item, Item::Brief(b) if b.tier == Tier::T4 && b.title == "fix-mul" && b.status == BriefStatus::Failed)
        })
        .unwrap();
    let mut tui = Tui::start(&repo, &run8);
    tui.wait_for(&["no gate waits for a decision", "Plan (T1)"]);
    for _ in 0..failed {
        tui.press(DOWN);
    }
    tui.press("\r");
    let screen = tui.wait_for(&["── Judge ──", "✗ rejected by judge — ws-arith/fix-mul"]);
    assert!(screen.contains("LEFTOVER-DEBUG"), "{screen}");
    // Esc closes the brief, Esc again goes to the runs list, which lists this run.
    tui.press("\x1b");
    tui.wait_for(&["Plan (T1)"]);
    tui.press("\x1b");
    tui.wait_for(&["agency inspect — runs", &run8]);
    tui.quit();
}

#[test]
fn inspect_into_a_pipe_prints_the_tree_and_without_a_run_says_what_it_needs() {
    let (repo, _runner, _store, run) = run_waiting_at_the_plan_gate();
    let out = repo.agency(&["inspect", &run.short()]).success().stdout();
    assert!(out.starts_with(&format!("Run {}", run.short())), "{out}");
    assert!(out.contains("GATE t1_plan: pending review"), "{out}");
    let err = repo.agency(&["inspect"]).fails_with(2).stderr();
    assert!(
        err.contains("inspect needs a run when its output is not a terminal"),
        "{err}"
    );
}
