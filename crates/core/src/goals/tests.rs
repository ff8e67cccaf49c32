//! Behaviour of the plan.md model as a whole: parse, patch, re-parse, summarise. The pin throughout is that a
//! patch changes exactly the bytes it means to and nothing else.

use super::*;
use crate::contract::GoalContract;

/// The seed's §4 example (minus its `## Goal: ...` placeholder).
const SEED: &str = "# Plan: fast reads

## Goal: Implement cache layer
<!-- id: cache-layer-1 -->
status: active
done_when: p95 < 50ms on bench-X. If wrong: timeouts in load-test.log
verify: pytest tests/cache -q && python bench/p95.py --max-ms 50
failure_modes:
  - cache silently bypassed (hit-rate ~0, latency ok by luck)
  - bench too small to exercise eviction
  - verify passes on a trivial/gamed test
- [x] wire cache client
- [ ] eviction policy
- [ ] load test

## Log
- 2026-06-15 14:02  cache client wired; eviction next
- 2026-06-15 14:31  eviction done; p95 bench reads 47ms (load-test.log)
";

/// The lines that differ between two texts of the same line count: (1-based line, old, new).
fn changed_lines(old: &str, new: &str) -> Vec<(usize, String, String)> {
    let old: Vec<&str> = old.split_inclusive('\n').collect();
    let new: Vec<&str> = new.split_inclusive('\n').collect();
    assert_eq!(old.len(), new.len(), "line count changed");
    old.iter()
        .zip(&new)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i + 1, a.to_string(), b.to_string()))
        .collect()
}

fn crlf(text: &str) -> String {
    text.replace('\n', "\r\n")
}

#[test]
fn parses_the_seed_example() {
    let doc = PlanDoc::parse(SEED);
    assert_eq!(doc.diagnostics(), &[]);
    assert_eq!(doc.objective(), Some("fast reads"));
    let [goal] = doc.goals() else { panic!("one goal") };
    assert_eq!(goal.id.as_deref(), Some("cache-layer-1"));
    assert_eq!(goal.title, "Implement cache layer");
    assert_eq!(goal.status, Some(GoalStatus::Active));
    assert_eq!(goal.failure_modes.len(), 3);
    let subtasks: Vec<_> = goal
        .subtasks
        .iter()
        .map(|s| (s.text.as_str(), s.checked, s.line))
        .collect();
    assert_eq!(
        subtasks,
        [
            ("wire cache client", true, 12),
            ("eviction policy", false, 13),
            ("load test", false, 14)
        ]
    );
    let lines = &goal.lines;
    assert_eq!(
        (
            lines.heading,
            lines.id,
            lines.status,
            lines.done_when.clone(),
            lines.verify,
            lines.end
        ),
        (3, Some(4), Some(5), Some(6..=6), Some(7), 14)
    );
    assert_eq!(
        lines.failure_modes,
        Some(ListLines {
            header: 8,
            items: vec![9, 10, 11]
        })
    );
    let log = doc.log().unwrap_or_else(|| panic!("log"));
    assert_eq!(log.heading, 16);
    assert_eq!(log.entries.iter().map(|e| e.line).collect::<Vec<_>>(), [17, 18]);
    assert_eq!(
        log.entries[0].text,
        "2026-06-15 14:02  cache client wired; eviction next"
    );
    assert_eq!(
        goal.contract(),
        GoalContract {
            done_when: "p95 < 50ms on bench-X. If wrong: timeouts in load-test.log".into(),
            verify: Some("pytest tests/cache -q && python bench/p95.py --max-ms 50".into()),
            failure_modes: vec![
                "cache silently bypassed (hit-rate ~0, latency ok by luck)".into(),
                "bench too small to exercise eviction".into(),
                "verify passes on a trivial/gamed test".into(),
            ],
            may_edit: vec![],
        }
    );
}

#[test]
fn text_round_trips_exactly() {
    for text in [
        SEED.to_string(),
        crlf(SEED),
        SEED.trim_end().to_string(),
        crlf(SEED.trim_end()),
        String::new(),
    ] {
        assert_eq!(PlanDoc::parse(&text).text(), text);
    }
}

#[test]
fn status_patch_changes_only_the_status_value() {
    let doc = PlanDoc::parse(SEED);
    let new = doc
        .set_status("cache-layer-1", GoalStatus::Done)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(SEED, &new),
        [(5, "status: active\n".into(), "status: done\n".into())]
    );
    assert_eq!(PlanDoc::parse(&new).goals()[0].status, Some(GoalStatus::Done));
    let shouted = SEED.replacen("status: active", "Status: ACTIVE", 1);
    let same = PlanDoc::parse(&shouted).set_status("cache-layer-1", GoalStatus::Active);
    assert_eq!(same.as_deref(), Ok(shouted.as_str()), "already active: no write");
}

#[test]
fn crlf_stays_crlf() {
    let text = crlf(SEED);
    let doc = PlanDoc::parse(&text);
    assert_eq!(doc.diagnostics(), &[]);
    let new = doc
        .set_status("cache-layer-1", GoalStatus::Cancelled)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(&text, &new),
        [(5, "status: active\r\n".into(), "status: cancelled\r\n".into())]
    );
    let logged = doc.append_log("signed off").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(logged, format!("{text}- signed off\r\n"));
    let added = doc.add_goal(&new_goal("g-2")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !added.replace("\r\n", "").contains('\n'),
        "a bare \\n was written into a CRLF file"
    );
}

#[test]
fn missing_final_newline_is_preserved() {
    let text = "## Goal: x\n<!-- id: x -->\ndone_when: y\nstatus: open";
    let doc = PlanDoc::parse(text);
    let new = doc
        .set_status("x", GoalStatus::Active)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(new, "## Goal: x\n<!-- id: x -->\ndone_when: y\nstatus: active");
    let logged = doc.append_log("started").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(logged, format!("{text}\n\n## Log\n- started"));
    let doc = PlanDoc::parse(&logged);
    let again = doc.append_log("more").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, format!("{logged}\n- more"));
}

#[test]
fn unknown_lines_are_kept_and_not_reported() {
    let text = "Some preamble a human wrote.\n\n\
        | a table | with: colons |\n|---|---|\n\n\
        ## Goal: Tolerance\n<!-- id: tol -->\n<!-- a note, not an id -->\nowner: someone\n\
        status: open\ndone_when: it works\nSome prose: explaining things.\n> a quote: yes\n\n\
        ### Notes\nstatus of the world: fine\n```sh\nstatus: not-a-field\n- [] not a checkbox\n```\n\
        - [ ] real subtask\n\n## Unrelated\n- [] ignored outside goals\nstatus: nope\n";
    let doc = PlanDoc::parse(text);
    assert_eq!(doc.diagnostics(), &[]);
    let [goal] = doc.goals() else { panic!("one goal") };
    assert_eq!(goal.status, Some(GoalStatus::Open));
    assert_eq!(goal.subtasks.len(), 1);
    let new = doc
        .set_status("tol", GoalStatus::Active)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(text, &new),
        [(10, "status: open\n".into(), "status: active\n".into())]
    );
}

#[test]
fn goal_sections_end_where_the_next_section_starts() {
    let text = "## Goal: a\n<!-- id: a -->\nstatus: open\ndone_when: x\n\n### Notes\n```\ncode\n```\n\n\n\
        ## Goal: b\n<!-- id: b -->\nstatus: open\ndone_when: y\n- [ ] t\n\n## Other\nprose\n";
    let doc = PlanDoc::parse(text);
    let ends: Vec<(usize, usize)> = doc
        .goals()
        .iter()
        .map(|g| (g.lines.heading, g.lines.end))
        .collect();
    assert_eq!(ends, [(1, 9), (12, 16)]);
}

#[test]
fn goals_serialise_without_patch_internals() {
    let doc = PlanDoc::parse(SEED);
    let json = serde_json::to_value(&doc.goals()[0]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json["id"], "cache-layer-1");
    assert_eq!(json["status"], "active");
    assert_eq!(
        json["subtasks"][0],
        serde_json::json!({"text": "wire cache client", "checked": true, "line": 12})
    );
    assert_eq!(
        json["lines"]["done_when"],
        serde_json::json!({"start": 6, "end": 6})
    );
    assert!(json["lines"].get("status_value").is_none());
}

#[test]
fn fields_are_read_with_case_spacing_and_decoration_tolerance() {
    let text = "### GOAL 2: Loose\n\n<!-- loose-1 -->\n**Status:** `Active`\nDone when: the thing\n  works end to end\n\
        Verify :  `cargo test -q`\nFailure modes: tests skipped\n  * mocked network\n\n  - flaky pass,\n    only on retry\n\
        may-edit: [tests/a.rs, `tests/b.rs`]\n  - scripts/verify.sh\n* [X] first\n1. [ ] second\n";
    let doc = PlanDoc::parse(text);
    assert_eq!(doc.diagnostics(), &[]);
    let goal = doc.goal("loose-1").unwrap_or_else(|| panic!("goal"));
    assert_eq!(goal.status, Some(GoalStatus::Active));
    assert_eq!(goal.done_when.as_deref(), Some("the thing works end to end"));
    assert_eq!(goal.lines.done_when, Some(5..=6));
    assert_eq!(goal.verify.as_deref(), Some("cargo test -q"));
    assert_eq!(
        goal.failure_modes,
        ["tests skipped", "mocked network", "flaky pass, only on retry"]
    );
    assert_eq!(goal.may_edit, ["tests/a.rs", "tests/b.rs", "scripts/verify.sh"]);
    assert_eq!(
        goal.subtasks.iter().map(|s| s.checked).collect::<Vec<_>>(),
        [true, false]
    );
    // The patch keeps the bold key and the backticks; only the word changes.
    let new = doc
        .set_status("loose-1", GoalStatus::Done)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(text, &new),
        [(4, "**Status:** `Active`\n".into(), "**Status:** `done`\n".into())]
    );
}

#[test]
fn malformed_fields_are_reported_with_line_numbers() {
    let text = "## Goal: Broken\n<!-- id: b -->\nstatus: finished\ndone_when:\nverify:\nfailure_modes:\n  -\n\
        - [] tick me\n- [ x] me too\nstatus: active\n\n## Goal:\n<!-- id: b -->\n\n## Goal: No id\n<!-- id: two words -->\n";
    let doc = PlanDoc::parse(text);
    let found: Vec<(usize, &str)> = doc.diagnostics().iter().map(|d| (d.line, d.field)).collect();
    assert_eq!(
        found,
        [
            (3, "status"),
            (4, "done_when"),
            (5, "verify"),
            (6, "failure_modes"),
            (8, "subtask"),
            (9, "subtask"),
            (10, "status"),
            (12, "title"),
            (12, "status"),
            (12, "done_when"),
            (13, "id"),
            (15, "status"),
            (15, "done_when"),
            (16, "id"),
        ]
    );
    assert_eq!(
        doc.diagnostics()[0].to_string(),
        "3: status: expected one of open, active, done, cancelled, found \"finished\""
    );
    assert_eq!(
        doc.diagnostics()[2].to_string(),
        "5: verify: expected a command (or no `verify:` line at all), found nothing"
    );
    // The document still parses: all three goals are there, the first with no status.
    assert_eq!(doc.goals().len(), 3);
    assert_eq!(doc.goals()[0].status, None);
    assert_eq!(doc.goals()[2].id, None);
    // Two goals share "b", so no patch picks one of them.
    assert!(matches!(
        doc.set_status("b", GoalStatus::Active),
        Err(PatchError::AmbiguousGoal { .. })
    ));
    // A malformed status is still the line a patch fixes.
    let unique = text.replacen("## Goal:\n<!-- id: b -->", "## Goal:\n<!-- id: c -->", 1);
    let fixed = PlanDoc::parse(&unique)
        .set_status("b", GoalStatus::Active)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(&unique, &fixed),
        [(3, "status: finished\n".into(), "status: active\n".into())]
    );
}

#[test]
fn missing_or_empty_status_is_filled_in_place() {
    let text =
        "## Goal: a\n<!-- id: a -->\ndone_when: x\n\n## Goal: b\n<!-- id: b -->\nstatus:\ndone_when: y\n";
    let doc = PlanDoc::parse(text);
    let a = doc
        .set_status("a", GoalStatus::Open)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        a,
        text.replacen("<!-- id: a -->\n", "<!-- id: a -->\nstatus: open\n", 1)
    );
    let b = doc
        .set_status("b", GoalStatus::Done)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(text, &b),
        [(7, "status:\n".into(), "status: done\n".into())]
    );
    assert_eq!(
        doc.set_status("nope", GoalStatus::Done),
        Err(PatchError::UnknownGoal("nope".into()))
    );
    assert_eq!(
        PatchError::UnknownGoal("nope".into()).to_string(),
        "no goal with id \"nope\" in plan.md"
    );
}

#[test]
fn ticking_subtasks() {
    let doc = PlanDoc::parse(SEED);
    let tick = |r: SubtaskRef, checked| doc.tick_subtask("cache-layer-1", &r, checked);
    let by_index = tick(SubtaskRef::Index(1), true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(SEED, &by_index),
        [(
            13,
            "- [ ] eviction policy\n".into(),
            "- [x] eviction policy\n".into()
        )]
    );
    let by_text = tick(SubtaskRef::Text("  Load   TEST ".into()), true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(SEED, &by_text),
        [(14, "- [ ] load test\n".into(), "- [x] load test\n".into())]
    );
    let partial = tick(SubtaskRef::Text("eviction".into()), true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(partial, by_index);
    let untick = tick(SubtaskRef::Index(0), false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed_lines(SEED, &untick),
        [(
            12,
            "- [x] wire cache client\n".into(),
            "- [ ] wire cache client\n".into()
        )]
    );
    assert_eq!(
        tick(SubtaskRef::Index(0), true).as_deref(),
        Ok(SEED),
        "already ticked: no change"
    );

    assert!(matches!(
        tick(SubtaskRef::Index(3), true),
        Err(PatchError::UnknownSubtask { count: 3, .. })
    ));
    assert!(matches!(
        tick(SubtaskRef::Text("deploy".into()), true),
        Err(PatchError::UnknownSubtask { .. })
    ));
    let ambiguous = tick(SubtaskRef::Text("i".into()), true);
    assert!(
        matches!(ambiguous, Err(PatchError::AmbiguousSubtask { .. })),
        "{ambiguous:?}"
    );
    assert_eq!(
        doc.tick_subtask("cache-layer-1", &SubtaskRef::Text("deploy".into()), true)
            .map_err(|e| e.to_string()),
        Err("goal \"cache-layer-1\" has no subtask \"deploy\" (it has 3)".to_string())
    );
}

#[test]
fn log_append_with_an_existing_log() {
    let doc = PlanDoc::parse(SEED);
    let new = doc
        .append_log("2026-06-15 14:33  cache-layer-1 signed off")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        new,
        format!("{SEED}- 2026-06-15 14:33  cache-layer-1 signed off\n")
    );

    // In the middle of the file, after its last entry, with prose and a later section untouched.
    let text = "## Log\n- one\n- two\nA trailing remark.\n\n## Goal: later\n<!-- id: l -->\nstatus: open\ndone_when: x\n";
    let new = PlanDoc::parse(text)
        .append_log("three\nlines")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(new, text.replacen("- two\n", "- two\n- three lines\n", 1));

    // A log heading with no entries yet.
    let new = PlanDoc::parse("# Plan: x\n\n## Log\n")
        .append_log("first")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(new, "# Plan: x\n\n## Log\n- first\n");

    assert!(matches!(
        PlanDoc::parse(SEED).append_log(" \n "),
        Err(PatchError::InvalidValue { .. })
    ));
}

#[test]
fn log_append_creates_the_section() {
    let text = "## Goal: x\n<!-- id: x -->\nstatus: open\ndone_when: y\n";
    let new = PlanDoc::parse(text)
        .append_log("started")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(new, format!("{text}\n## Log\n- started\n"));
    let again = PlanDoc::parse(&new)
        .append_log("next")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, format!("{new}- next\n"));
    assert_eq!(
        PlanDoc::parse("").append_log("hello").as_deref(),
        Ok("## Log\n- hello\n")
    );
    assert_eq!(
        PlanDoc::parse("x\n\n").append_log("hello").as_deref(),
        Ok("x\n\n## Log\n- hello\n")
    );
}

pub(super) fn new_goal(id: &str) -> NewGoal {
    NewGoal {
        id: id.to_string(),
        title: "Stop the flaky test".into(),
        status: GoalStatus::Active,
        done_when: "tests/net.rs passes 50 runs in a row".into(),
        verify: Some("cargo test -p net -- --test-threads 1".into()),
        failure_modes: vec!["test marked #[ignore]".into(), "retry loop hides the race".into()],
        may_edit: vec!["tests/net.rs".into()],
        subtasks: vec!["find the race".into(), "fix it".into()],
    }
}

#[test]
fn add_goal_then_reparse() {
    let doc = PlanDoc::parse(SEED);
    let new = doc
        .add_goal(&new_goal("flaky-1"))
        .unwrap_or_else(|e| panic!("{e}"));
    let block = "## Goal: Stop the flaky test\n<!-- id: flaky-1 -->\nstatus: active\n\
        done_when: tests/net.rs passes 50 runs in a row\nverify: cargo test -p net -- --test-threads 1\n\
        failure_modes:\n  - test marked #[ignore]\n  - retry loop hides the race\nmay_edit:\n  - tests/net.rs\n\
        - [ ] find the race\n- [ ] fix it\n\n";
    // Inserted before the trailing log, everything else byte-identical.
    assert_eq!(new, SEED.replacen("## Log\n", &format!("{block}## Log\n"), 1));
    let reparsed = PlanDoc::parse(&new);
    assert_eq!(reparsed.diagnostics(), &[]);
    let goal = reparsed.goal("flaky-1").unwrap_or_else(|| panic!("goal"));
    assert_eq!(goal.may_edit, ["tests/net.rs"]);
    assert_eq!(reparsed.goals().len(), 2);
    assert_eq!(reparsed.log().map(|l| l.entries.len()), Some(2));

    // No log: appended at the end, after a blank line; the heading level follows the existing goals.
    let text = "### Goal: a\n<!-- id: a -->\nstatus: open\ndone_when: x";
    let new = PlanDoc::parse(text)
        .add_goal(&new_goal("b"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        new.starts_with(&format!("{text}\n\n### Goal: Stop the flaky test\n")),
        "{new}"
    );
    assert!(new.ends_with("- [ ] fix it"), "no final newline stays that way");
    assert_eq!(PlanDoc::parse(&new).diagnostics(), &[]);

    let new = PlanDoc::parse("")
        .add_goal(&new_goal("c"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        new.starts_with("## Goal: Stop the flaky test\n<!-- id: c -->\n"),
        "{new}"
    );
}

#[test]
fn add_goal_rejects_what_would_not_read_back() {
    let doc = PlanDoc::parse(SEED);
    assert_eq!(
        doc.add_goal(&new_goal("cache-layer-1")),
        Err(PatchError::DuplicateGoalId("cache-layer-1".into()))
    );
    let bad = [
        NewGoal {
            id: "two words".into(),
            ..new_goal("x")
        },
        NewGoal {
            title: "a\nb".into(),
            ..new_goal("x")
        },
        NewGoal {
            done_when: " ".into(),
            ..new_goal("x")
        },
        NewGoal {
            verify: Some(String::new()),
            ..new_goal("x")
        },
        NewGoal {
            title: "ends in hashes ##".into(),
            ..new_goal("x")
        },
    ];
    for goal in bad {
        assert!(
            matches!(doc.add_goal(&goal), Err(PatchError::InvalidValue { .. })),
            "{goal:?}"
        );
    }
}

#[test]
fn suggested_ids_are_free_slugs() {
    let doc = PlanDoc::parse("## Goal: x\n<!-- id: cache-layer-1 -->\n");
    assert_eq!(doc.suggest_goal_id("Cache layer!"), "cache-layer-2");
    assert_eq!(doc.suggest_goal_id("Ünïcode ok"), "n-code-ok-1");
    assert_eq!(doc.suggest_goal_id("???"), "goal-1");
}

#[test]
fn log_entries_have_the_seed_shape() {
    let at = chrono::DateTime::parse_from_rfc3339("2026-06-15T14:02:59Z")
        .unwrap_or_else(|e| panic!("{e}"))
        .with_timezone(&chrono::Utc);
    assert_eq!(
        log_entry(at, " cache client wired "),
        "2026-06-15 14:02  cache client wired"
    );
}

#[test]
fn summary_has_a_fixed_shape() {
    let doc = PlanDoc::parse(SEED);
    assert_eq!(
        render_active_summary(&doc),
        "Active goals in plan.md: 1 (open 0, done 0, cancelled 0)

[cache-layer-1] Implement cache layer
done_when: p95 < 50ms on bench-X. If wrong: timeouts in load-test.log
verify: pytest tests/cache -q && python bench/p95.py --max-ms 50
failure_modes:
  - cache silently bypassed (hit-rate ~0, latency ok by luck)
  - bench too small to exercise eviction
  - verify passes on a trivial/gamed test
may_edit: (none)
subtasks (1/3 done):
  - [x] wire cache client
  - [ ] eviction policy
  - [ ] load test

Last log entry: 2026-06-15 14:31  eviction done; p95 bench reads 47ms (load-test.log)
"
    );
}

#[test]
fn summary_is_byte_stable() {
    let summary = render_active_summary(&PlanDoc::parse(SEED));
    assert_eq!(render_active_summary(&PlanDoc::parse(SEED)), summary);
    assert_eq!(
        render_active_summary(&PlanDoc::parse(&crlf(SEED))),
        summary,
        "line endings do not leak in"
    );
    let noted = SEED.replacen("## Log", "Some note a human added.\n\n## Log", 1);
    assert_eq!(
        render_active_summary(&PlanDoc::parse(&noted)),
        summary,
        "prose does not change it"
    );
    let done = PlanDoc::parse(SEED)
        .set_status("cache-layer-1", GoalStatus::Done)
        .unwrap_or_else(|e| panic!("{e}"));
    let done_summary = render_active_summary(&PlanDoc::parse(&done));
    assert_ne!(done_summary, summary);
    assert!(
        done_summary
            .starts_with("Active goals in plan.md: 0 (open 0, done 1, cancelled 0)\n\nLast log entry:")
    );
    let broken = render_active_summary(&PlanDoc::parse("## Goal: x\nstatus: bogus\n"));
    assert!(
        broken.contains("\nplan.md problems:\n  - line 1: id: expected"),
        "{broken}"
    );
}

#[test]
fn an_indented_checkbox_under_failure_modes_stays_a_failure_mode() {
    let text = "## Goal: Cache\n<!-- id: c -->\nstatus: active\ndone_when: fast\nfailure_modes:\n  - [ ] cache silently bypassed\n  - bench too small\n- [ ] wire client\n  - [ ] nested subtask\n";
    let doc = PlanDoc::parse(text);
    let goal = doc.goal("c").unwrap_or_else(|| panic!("goal"));
    assert_eq!(
        goal.failure_modes,
        vec![
            "[ ] cache silently bypassed".to_string(),
            "bench too small".to_string()
        ]
    );
    assert_eq!(
        goal.lines.failure_modes.as_ref().map(|l| l.items.clone()),
        Some(vec![6, 7])
    );
    let subtasks: Vec<_> = goal.subtasks.iter().map(|s| (s.text.as_str(), s.line)).collect();
    assert_eq!(subtasks, vec![("wire client", 8), ("nested subtask", 9)]);
    assert!(doc.diagnostics().is_empty(), "{:?}", doc.diagnostics());

    // An unindented checkbox right after the header is a subtask, and leaves the list empty.
    let flat = "## Goal: Cache\n<!-- id: c -->\nstatus: active\ndone_when: fast\nfailure_modes:\n- [ ] wire client\n";
    let doc = PlanDoc::parse(flat);
    let goal = doc.goal("c").unwrap_or_else(|| panic!("goal"));
    assert!(goal.failure_modes.is_empty());
    assert_eq!(goal.subtasks.len(), 1);
    assert!(doc.diagnostics().iter().any(|d| d.field == "failure_modes"));
}

#[test]
fn a_failure_mode_that_reads_like_a_checkbox_round_trips_through_add_goal() {
    let goal = NewGoal {
        failure_modes: vec!["[ ] looks like a checkbox".into()],
        ..new_goal("x")
    };
    let text = PlanDoc::parse(SEED)
        .add_goal(&goal)
        .unwrap_or_else(|e| panic!("{e}"));
    let reparsed = PlanDoc::parse(&text);
    let added = reparsed.goal("x").unwrap_or_else(|| panic!("goal"));
    assert_eq!(added.failure_modes, vec!["[ ] looks like a checkbox".to_string()]);
    assert!(added.subtasks.iter().all(|s| !s.text.contains("looks like")));
}

#[test]
fn a_shared_id_is_ambiguous_for_every_patch() {
    let text = "## Goal: One\n<!-- id: same -->\nstatus: active\ndone_when: a\n\n## Goal: Two\n<!-- id: same -->\nstatus: active\ndone_when: b\n";
    let doc = PlanDoc::parse(text);
    assert_eq!(doc.goals_with_id("same").len(), 2);
    let ambiguous = PatchError::AmbiguousGoal {
        id: "same".into(),
        headings: vec![1, 6],
    };
    assert_eq!(doc.unique_goal("same").err(), Some(ambiguous.clone()));
    assert_eq!(doc.set_status("same", GoalStatus::Done), Err(ambiguous.clone()));
    assert_eq!(
        doc.tick_subtask("same", &SubtaskRef::Index(0), true),
        Err(ambiguous.clone())
    );
    assert!(ambiguous.to_string().contains("lines 1 and 6"), "{ambiguous}");
    assert_eq!(
        doc.unique_goal("other").err(),
        Some(PatchError::UnknownGoal("other".into()))
    );
}

#[test]
fn a_new_goal_never_goes_into_the_archive() {
    let text = "# Plan\n\n## Goal: a\n<!-- id: a -->\nstatus: active\ndone_when: x\n\n## Log\n- 2026-11-27 06:00  a added\n\n\
                ## Archive\n\n## Goal: old\n<!-- id: old -->\nstatus: cancelled\ndone_when: y\n";
    let doc = PlanDoc::parse(text);
    assert_eq!(doc.archive_heading(), Some(11));
    let new = doc.add_goal(&new_goal("b")).unwrap_or_else(|e| panic!("{e}"));
    let (live, archived) = new.split_once("## Archive").unwrap_or_else(|| panic!("{new}"));
    assert!(
        live.contains("<!-- id: b -->") && live.find("id: b").unwrap() < live.find("## Log").unwrap(),
        "{new}"
    );
    assert!(!archived.contains("id: b"), "{new}");
    assert_eq!(PlanDoc::parse(&new).goals().len(), 3);

    // No log before the archive: before the archive.
    let text = "## Goal: a\n<!-- id: a -->\nstatus: active\ndone_when: x\n\n## Archive\n\n## Goal: old\n\
                <!-- id: old -->\nstatus: done\ndone_when: y\n";
    let new = PlanDoc::parse(text)
        .add_goal(&new_goal("b"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        new.find("id: b").unwrap() < new.find("## Archive").unwrap(),
        "{new}"
    );
}
