//! The terminal `inspect`'s views drawn onto ratatui's `TestBackend` over a blackboard written as a run
//! writes it, one snapshot per view: the runs list, a run at its plan gate (the plan and how to decide it), a
//! failed slice opened whole (teachback, verify output, the judge's verdict, its diff), the cost; then the
//! keys that decide the gate go through a decision function that is given exactly what was shown, and the
//! call behind it (`agency approve`'s) decides nothing when another gate waits than the one shown.

use std::str::FromStr;
use std::sync::{Arc, Mutex};

use agency_cli::tui::app::{App, Decision, Prompt, Screen};
use agency_cli::tui::view::{draw, printable};
use agency_core::brief::{Brief, BriefStatus};
use agency_core::event::{EventKind, NewEvent};
use agency_core::gate::GateKind;
use agency_core::teachback::TeachbackState;
use agency_core::tier::Tier;
use agency_core::variety::Variety;
use agency_core::{BriefId, GateId, RunId};
use agency_store::{Blackboard, NewArtifact, NewGate, NewRun, SqliteBlackboard, SteppingClock};
use chrono::{DateTime, Duration, Utc};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

const RUN: &str = "0193a1b2-0000-7000-8000-0000abc12345";
const PLANNER: &str = "0193a1b2-0000-7000-8000-00000000f001";
const FIX_MUL: &str = "0193a1b2-0000-7000-8000-00000000f004";

fn at(time: &str) -> DateTime<Utc> {
    DateTime::from_str(&format!("2026-03-30T{time}Z")).unwrap()
}

fn brief(id: &str, run: RunId, tier: Tier, workstream: &str, title: &str, status: BriefStatus) -> Brief {
    Brief {
        id: BriefId::from_str(id).unwrap(),
        run,
        parent: None,
        tier,
        workstream: workstream.into(),
        title: title.into(),
        personality: None,
        goal_anchor: "Fix the calculator".into(),
        instructions: "Make mul.sh multiply.".into(),
        inputs: vec![],
        variety: Some(Variety::new(1, 1, 1, 1).unwrap()),
        contract: None,
        retry_budget: 2,
        attempt: 0,
        depends_on: vec![],
        branch: None,
        worktree: None,
        status,
        teachback: TeachbackState::Active,
        claimed_by: None,
        created_at: at("12:30:20"),
    }
}

/// A run whose plan waits at its gate, with a first fix-mul that its judge rejected.
fn seeded() -> (Arc<dyn Blackboard>, RunId) {
    let store = SqliteBlackboard::open_in_memory()
        .unwrap()
        .with_clock(Arc::new(SteppingClock::new(at("12:30:00"), Duration::zero())));
    let mut new = NewRun::new("Fix the calculator", "/repo");
    new.id = RunId::from_str(RUN).unwrap();
    // A team run records the configuration it started with.
    new.config = json!({ "tiers": {} });
    let run = store.create_run(new).unwrap().id;
    let planner = brief(PLANNER, run, Tier::T1, "plan", "plan", BriefStatus::Done);
    store.insert_brief(&planner).unwrap();
    let plan = json!({
        "run_id": RUN, "goal_anchor": "Fix the calculator", "complexity": "medium",
        "retry_budget_multiplier": 1,
        "workstreams": [{
            "id": "ws-arith", "name": "arithmetic", "domain": "backend", "tier_path": ["t3", "t4", "t5"],
            "parallel_group": "A", "notes": "add.sh and mul.sh have the wrong operators.",
            "variety": { "novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2 },
            "contract": { "done_when": "sh test_mul.sh passes", "verify": "sh test_arith.sh" }
        }],
        "parallelism": { "groups": { "A": ["ws-arith"] }, "sequence": ["A"] },
        "self_critique_summary": "One file."
    });
    let mut output = NewArtifact::new(
        run,
        format!("output/{}", planner.id),
        "application/json",
        serde_json::to_vec(&plan).unwrap(),
    );
    output.brief = Some(planner.id);
    store.put_artifact(output).unwrap();

    // T2's records of the workstream: boundaries with shared assumptions, and the canonical architecture.
    let record = |name: &str, content_type: &str, text: String| {
        store
            .put_artifact(NewArtifact::new(run, name, content_type, text.into_bytes()))
            .unwrap();
    };
    record(
        "boundaries/ws-arith",
        "application/json",
        json!({ "boundaries": [{ "domain": "backend", "owns": ["add.sh", "mul.sh"], "excludes": [".agency/"] }],
                "shared_assumptions": ["POSIX sh only"] })
        .to_string(),
    );
    record(
        "architecture/ws-arith",
        "text/markdown",
        "# Arithmetic\nEach operator is one script.".into(),
    );

    let mut fix_mul = brief(FIX_MUL, run, Tier::T4, "ws-arith", "fix-mul", BriefStatus::Failed);
    fix_mul.attempt = 1;
    store.insert_brief(&fix_mul).unwrap();
    let on_fix_mul = |kind: EventKind, payload: serde_json::Value, time: &str| {
        store
            .append_event(
                NewEvent::new(run, kind, payload)
                    .brief(fix_mul.id)
                    .tier(Tier::T4)
                    .at(at(time)),
            )
            .unwrap();
    };
    on_fix_mul(
        EventKind::SignoffVerify,
        json!({ "command": "sh test_mul.sh", "exit_code": 0, "duration_ms": 300, "passed": true,
                "subject": "ws-arith/fix-mul" }),
        "12:31:00",
    );
    on_fix_mul(
        EventKind::SignoffRejected,
        // An agent's text may carry escape sequences: they must reach the screen as text.
        json!({ "subject": "ws-arith/fix-mul", "by": "judge",
                "missing": ["mul.sh still carries the LEFTOVER-DEBUG marker"],
                "summary": "mul.sh multiplies\u{1b}[2J but keeps a marker" }),
        "12:31:05",
    );
    let mut diff = NewArtifact::new(
        run,
        format!("diff/{}", fix_mul.id),
        "text/x-diff",
        b"diff --git a/mul.sh b/mul.sh\n--- a/mul.sh\n+++ b/mul.sh\n@@ -1 +1,2 @@\n-echo $(($1 + $2))\n+echo $(($1 * $2))\n+# LEFTOVER-DEBUG\n".to_vec(),
    );
    diff.brief = Some(fix_mul.id);
    store.put_artifact(diff).unwrap();
    store
        .append_event(
            NewEvent::new(
                run,
                EventKind::Usage,
                json!({ "model": "m", "provider": "p", "input_tokens": 1200, "output_tokens": 300,
                        "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.0123 }),
            )
            .brief(fix_mul.id)
            .tier(Tier::T4)
            .at(at("12:31:06")),
        )
        .unwrap();
    store
        .open_gate(NewGate::new(
            run,
            GateKind::T1Plan,
            json!({ "message": "Waiting on approval before T3 spawns" }),
        ))
        .unwrap();
    (Arc::new(store), run)
}

fn screen(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(110, 34)).unwrap();
    terminal.draw(|frame| draw(frame, app)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn no_decision(_: RunId, _: GateId, _: Decision) -> Result<String, String> {
    panic!("nothing should have been decided")
}

#[test]
fn each_view_draws_what_show_renders() {
    let (store, run) = seeded();
    let mut app = App::new(store.clone(), None).unwrap();
    assert_eq!(app.screen, Screen::Runs);
    insta::assert_snapshot!("runs", screen(&app));

    app.on_key(key(KeyCode::Enter), &no_decision);
    assert_eq!(app.screen, Screen::Run);
    // It opens on the gate that waits, showing the plan it asks about.
    let at_gate = screen(&app);
    assert!(at_gate.contains("verify         sh test_arith.sh"), "{at_gate}");
    insta::assert_snapshot!("run_at_its_plan_gate", at_gate);

    // The seed's `[view …]` lines under the workstream.
    let record_view = |app: &mut App, label: &str| -> String {
        while app.selected_item().is_none_or(|i| i.label().trim() != label) {
            app.on_key(key(KeyCode::Up), &no_decision);
        }
        screen(app)
    };
    // Upwards from the gate: the architecture, the assumptions, the boundaries.
    let canonical = record_view(&mut app, "[view canonical architecture]");
    assert!(canonical.contains("Each operator is one script."), "{canonical}");
    let shared = record_view(&mut app, "[view shared assumptions]");
    assert!(shared.contains("- POSIX sh only"), "{shared}");
    insta::assert_snapshot!("shared_assumptions", shared);
    let bounds = record_view(&mut app, "[view domain boundaries]");
    assert!(bounds.contains("owns      add.sh, mul.sh"), "{bounds}");
    assert!(bounds.contains("excludes  .agency/"), "{bounds}");

    // To the failed slice, then open it.
    while !matches!(app.selected_item(), Some(agency_cli::tui::model::Item::Brief(b)) if b.title == "fix-mul")
    {
        app.on_key(key(KeyCode::Down), &no_decision);
    }
    app.on_key(key(KeyCode::Enter), &no_decision);
    assert!(app.zoomed);
    let opened = screen(&app);
    assert!(
        opened.contains("✗ rejected by judge — ws-arith/fix-mul"),
        "{opened}"
    );
    assert!(opened.contains("^[[2J"), "the escape shown as text:\n{opened}");
    insta::assert_snapshot!("failed_slice_opened", opened);
    // Scrolling down reaches the diff.
    for _ in 0..4 {
        app.on_key(key(KeyCode::PageDown), &no_decision);
    }
    let scrolled = screen(&app);
    assert!(scrolled.contains("+# LEFTOVER-DEBUG"), "{scrolled}");

    app.on_key(key(KeyCode::Esc), &no_decision);
    while !matches!(app.selected_item(), Some(agency_cli::tui::model::Item::Cost)) {
        app.on_key(key(KeyCode::Down), &no_decision);
    }
    insta::assert_snapshot!("cost", screen(&app));
    let _ = run;
}

#[test]
fn keys_decide_the_gate_shown_through_the_decision_function() {
    let (store, run) = seeded();
    let gate = store.pending_gates(Some(run)).unwrap()[0].id;
    let asked: Mutex<Vec<(RunId, GateId, Decision)>> = Mutex::new(Vec::new());
    let decide = |r: RunId, g: GateId, d: Decision| -> Result<String, String> {
        asked.lock().unwrap().push((r, g, d));
        Ok("approved  gate t1_plan".into())
    };
    let mut app = App::new(store.clone(), Some(run)).unwrap();

    // Anything but `y` leaves the gate alone.
    app.on_key(key(KeyCode::Char('a')), &decide);
    assert_eq!(app.prompt, Prompt::ConfirmApprove);
    app.on_key(key(KeyCode::Char('n')), &decide);
    assert_eq!(app.message.as_deref(), Some("not approved"));
    // A rejection needs a reason; Esc abandons it.
    app.on_key(key(KeyCode::Char('r')), &decide);
    app.on_key(key(KeyCode::Enter), &decide);
    assert_eq!(app.prompt, Prompt::Reason(String::new()));
    app.on_key(key(KeyCode::Esc), &decide);
    assert!(asked.lock().unwrap().is_empty());

    app.on_key(key(KeyCode::Char('r')), &decide);
    for c in "too big".chars() {
        app.on_key(key(KeyCode::Char(c)), &decide);
    }
    assert!(screen(&app).contains("reject — why? too big"));
    app.on_key(key(KeyCode::Enter), &decide);
    app.on_key(key(KeyCode::Char('a')), &decide);
    app.on_key(key(KeyCode::Char('y')), &decide);
    assert_eq!(
        *asked.lock().unwrap(),
        [
            (run, gate, Decision::Reject("too big".into())),
            (run, gate, Decision::Approve)
        ]
    );
    assert_eq!(app.message.as_deref(), Some("approved  gate t1_plan"));
}

#[test]
fn printable_keeps_escapes_and_control_characters_off_the_terminal() {
    assert_eq!(printable("a\u{1b}[31mred"), "a^[[31mred");
    assert_eq!(printable("tab\there"), "tab    here");
    assert_eq!(printable("bell\u{7}\u{9b}x"), "bell\u{fffd}\u{fffd}x");
    assert_eq!(printable("\u{202e}evil"), "\u{fffd}evil");
    assert_eq!(printable("plain ✓"), "plain ✓");
}

#[test]
fn a_gate_decided_elsewhere_meanwhile_is_not_taken_for_the_one_shown() {
    let repo = crate::support::Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new(
            "Fix the calculator",
            repo.path().display().to_string(),
        ))
        .unwrap()
        .id;
    let shown = store
        .open_gate(NewGate::new(run, GateKind::T1Plan, json!({})))
        .unwrap();
    // Someone else decides the gate on screen, and the run opens another.
    store
        .decide_gate(
            shown.id,
            agency_core::gate::GateDecision::Approve {
                by: "dashboard".into(),
                note: None,
            },
        )
        .unwrap();
    let next = store
        .open_gate(NewGate::new(run, GateKind::Budget, json!({})))
        .unwrap();
    let ctx = agency_cli::commands::Context {
        cwd: repo.path().to_path_buf(),
        overrides: Default::default(),
    };
    let refused =
        agency_cli::commands::approve::approve_pending(&ctx, &store, run, Some(shown.id), None).unwrap_err();
    assert!(
        refused.message.contains("gate budget of run") && refused.message.contains("look at it first"),
        "{}",
        refused.message
    );
    let refused =
        agency_cli::commands::reject::reject_pending(&ctx, &store, run, Some(shown.id), "no".into())
            .unwrap_err();
    assert!(
        refused.message.contains("look at it first"),
        "{}",
        refused.message
    );
    assert_eq!(
        store.get_gate(next.id).unwrap().status,
        agency_core::gate::GateStatus::Pending
    );
    // The gate on screen is decided, signed by the OS user as `agency approve` signs.
    let line =
        agency_cli::commands::approve::approve_pending(&ctx, &store, run, Some(next.id), None).unwrap();
    assert_eq!(line, format!("approved  gate budget of run {}", run.short()));
    assert_eq!(
        store.get_gate(next.id).unwrap().decided_by.as_deref(),
        Some(crate::support::decider().as_str())
    );
}

/// A run whose agents were not confined (`sandbox.mode: off`) says so in red above everything else, on its
/// gate's text and in the runs list, as the log, `show plan`, approve and the dashboard do; a confined run
/// carries no banner.
#[test]
fn an_unconfined_run_shows_the_sandbox_off_banner() {
    let store = SqliteBlackboard::open_in_memory()
        .unwrap()
        .with_clock(Arc::new(SteppingClock::new(at("12:30:00"), Duration::zero())));
    let mut new = NewRun::new("Fix it unconfined", "/repo");
    new.id = RunId::from_str(RUN).unwrap();
    new.config = json!({ "tiers": {}, "sandbox": { "mode": "off" } });
    let run = store.create_run(new).unwrap().id;
    store
        .open_gate(NewGate::new(
            run,
            GateKind::T1Plan,
            json!({ "message": "Waiting on approval before T3 spawns" }),
        ))
        .unwrap();
    let store: Arc<dyn Blackboard> = Arc::new(store);
    let mut app = App::new(store.clone(), None).unwrap();
    let runs = screen(&app);
    assert!(runs.contains("Fix it unconfined  SANDBOX OFF"), "{runs}");
    app.on_key(key(KeyCode::Enter), &no_decision);
    let shown = screen(&app);
    assert!(
        shown.starts_with("SANDBOX OFF: this run's agents run unconfined"),
        "{shown}"
    );
    assert!(
        app.detail.contains(agency_core::config::SANDBOX_OFF_BANNER),
        "{}",
        app.detail
    );
    insta::assert_snapshot!("sandbox_off", shown);
    // The banner is red: a colour the rest of the screen does not use.
    let mut terminal = Terminal::new(TestBackend::new(110, 34)).unwrap();
    terminal.draw(|frame| draw(frame, &app)).unwrap();
    assert_eq!(terminal.backend().buffer()[(0, 0)].bg, ratatui::style::Color::Red);

    let (confined, _) = seeded();
    let mut app = App::new(confined, None).unwrap();
    app.on_key(key(KeyCode::Enter), &no_decision);
    assert!(!screen(&app).contains("SANDBOX OFF"));
}

/// A refresh reads the events written since the last one and shows them: the view ends up holding exactly
/// what a whole read gives, and the selected text is rendered again only when something moved.
#[test]
fn a_refresh_adds_the_new_events_and_redraws_what_they_change() {
    let (store, run) = seeded();
    let mut app = App::new(store.clone(), Some(run)).unwrap();
    while !matches!(app.selected_item(), Some(agency_cli::tui::model::Item::Cost)) {
        app.on_key(key(KeyCode::Down), &no_decision);
    }
    let before = app.detail.clone();
    assert!(before.contains("$0.0123"), "{before}");
    let held = app.run.as_ref().unwrap().events.len();

    // Nothing written: nothing new held, the same text.
    app.refresh();
    assert_eq!(app.run.as_ref().unwrap().events.len(), held);
    assert_eq!(app.detail, before);

    let fix_mul = BriefId::from_str(FIX_MUL).unwrap();
    store
        .append_event(
            NewEvent::new(
                run,
                EventKind::Usage,
                json!({ "model": "m", "provider": "p", "input_tokens": 100, "output_tokens": 10,
                        "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.5 }),
            )
            .brief(fix_mul)
            .tier(Tier::T4)
            .at(at("12:32:00")),
        )
        .unwrap();
    app.refresh();
    let view = app.run.as_ref().unwrap();
    assert_eq!(view.events.len(), held + 1);
    let whole = agency_cli::tui::model::run_view(&*store, run).unwrap();
    assert_eq!(
        view.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        whole.events.iter().map(|e| e.seq).collect::<Vec<_>>()
    );
    assert!(app.detail.contains("$0.5123"), "{}", app.detail);
}
