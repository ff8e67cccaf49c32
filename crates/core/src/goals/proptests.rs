//! Properties of the scanner and patches over random plan-like text: parsing never panics and always
//! round-trips, and each patch changes only the line (or, for appends, only the place) it means to.

use proptest::prelude::*;

use super::tests::new_goal;
use super::*;

/// Lines that exercise every recogniser, valid and not, so random plans hit the interesting paths.
const FRAGMENTS: &[&str] = &[
    "## Goal: A",
    "### goal 2: B",
    "# Goal",
    "# Plan: x",
    "## Log",
    "## Notes",
    "#### deep",
    "<!-- id: g1 -->",
    "<!-- id: g2 -->",
    "<!-- g3 -->",
    "<!-- id: -->",
    "<!-- note here -->",
    "status: active",
    "Status:  DONE ",
    "status: weird",
    "status:",
    "**status:** open",
    "status: `cancelled`",
    "done_when: x",
    "done when:",
    "  continued",
    "verify: `cargo test`",
    "verify:",
    "failure_modes:",
    "failure_modes: inline",
    "  - mode",
    "may_edit: a, b",
    "- [ ] sub",
    "- [x] done sub",
    "  * [X] nested",
    "- [] bad",
    "-[ ] bad",
    "- [ ]",
    "```",
    "~~~",
    "- log entry",
    "",
    "   ",
    "random prose: with colon",
    "é ü 日本: 語",
    "\r",
    "- [link](x)",
    "---",
];

/// A goal-shaped block: a heading, usually an id and a status, then random fragments.
fn goal_block() -> impl Strategy<Value = Vec<&'static str>> {
    let headings = &["## Goal: A", "### goal 2: B", "# Goal", "## Goal: C"][..];
    let ids = &[
        "<!-- id: g1 -->",
        "<!-- id: g2 -->",
        "<!-- g3 -->",
        "<!-- id: -->",
        "<!-- id: g4 -->",
    ][..];
    let statuses = &[
        "status: active",
        "**Status:** `Done`",
        "status: bogus",
        "status:",
        "Status :open  ",
    ][..];
    (
        prop::sample::select(headings),
        prop::sample::select(ids),
        prop::sample::select(statuses),
        prop::collection::vec(prop::sample::select(FRAGMENTS), 0..10),
    )
        .prop_map(|(heading, id, status, body)| {
            let mut block = vec![heading, id, status];
            block.extend(body);
            block
        })
}

/// A plan-like text: fragments, goal blocks, more fragments, with either line ending and either final state.
fn plan_text() -> impl Strategy<Value = String> {
    let fragments = || prop::collection::vec(prop::sample::select(FRAGMENTS), 0..6);
    (
        fragments(),
        prop::collection::vec(goal_block(), 0..5),
        fragments(),
        prop::bool::ANY,
        prop::bool::ANY,
    )
        .prop_map(|(head, goals, tail, crlf, final_newline)| {
            let mut lines = head;
            lines.extend(goals.into_iter().flatten());
            lines.extend(tail);
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(eol);
            if final_newline && !text.is_empty() {
                text.push_str(eol);
            }
            text
        })
}

/// Asserts that `new` differs from `old` in line `changed` (1-based) at most.
fn only_line_changed(old: &str, new: &str, changed: usize) -> Result<(), TestCaseError> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    prop_assert_eq!(old_lines.len(), new_lines.len());
    for (i, (a, b)) in old_lines.iter().zip(&new_lines).enumerate() {
        if i + 1 != changed {
            prop_assert_eq!(a, b, "line {} changed", i + 1);
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_text_parses_without_panicking_and_round_trips(text in any::<String>()) {
        let doc = PlanDoc::parse(&text);
        prop_assert_eq!(doc.text(), text);
        let _ = render_active_summary(&doc);
    }

    #[test]
    fn markdownish_text_parses_and_round_trips(text in "[#\\-*\\[\\]xX :<!>`a-z\\r\\n\\t]{0,200}") {
        let doc = PlanDoc::parse(&text);
        prop_assert_eq!(doc.text(), text);
    }

    #[test]
    fn a_status_patch_changes_only_the_status_line(text in plan_text(), pick in any::<prop::sample::Index>(), status in prop::sample::select(&GoalStatus::ALL[..])) {
        let doc = PlanDoc::parse(&text);
        prop_assert_eq!(doc.text(), text.clone());
        // Patches address a goal by its id; an id two goals share is refused (tested below), not patched.
        let unique = |g: &&Goal| g.id.as_deref().is_some_and(|id| doc.goals_with_id(id).len() == 1);
        let targets: Vec<&Goal> = doc.goals().iter().filter(|g| g.lines.status.is_some()).filter(unique).collect();
        if targets.is_empty() {
            return Ok(());
        }
        let goal = targets[pick.index(targets.len())];
        let id = goal.id.clone().unwrap_or_default();
        let Some(status_line) = goal.lines.status else { return Ok(()) };
        let new = doc.set_status(&id, status).map_err(|e| TestCaseError::fail(e.to_string()))?;
        only_line_changed(&text, &new, status_line)?;
        let reparsed = PlanDoc::parse(&new);
        prop_assert_eq!(reparsed.goal(&id).and_then(|g| g.status), Some(status));
        prop_assert_eq!(reparsed.goals().len(), doc.goals().len());
    }

    #[test]
    fn a_tick_changes_only_that_checkbox(text in plan_text(), pick in any::<prop::sample::Index>(), checked in any::<bool>()) {
        let doc = PlanDoc::parse(&text);
        let Some(goal) = doc.goals().iter().filter(|g| !g.subtasks.is_empty()).find(|g| {
            g.id.as_deref().is_some_and(|id| doc.goals_with_id(id).len() == 1)
        }) else {
            return Ok(());
        };
        let id = goal.id.clone().unwrap_or_default();
        let index = pick.index(goal.subtasks.len());
        let line = goal.subtasks[index].line;
        let new = doc
            .tick_subtask(&id, &SubtaskRef::Index(index), checked)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        only_line_changed(&text, &new, line)?;
        prop_assert!(text.len() == new.len());
        let reparsed = PlanDoc::parse(&new);
        prop_assert_eq!(reparsed.goal(&id).map(|g| g.subtasks[index].checked), Some(checked));
    }

    #[test]
    fn a_shared_id_is_never_patched(text in plan_text(), status in prop::sample::select(&GoalStatus::ALL[..])) {
        let doc = PlanDoc::parse(&text);
        for goal in doc.goals() {
            let Some(id) = goal.id.as_deref() else { continue };
            if doc.goals_with_id(id).len() > 1 {
                let refused = matches!(doc.set_status(id, status), Err(PatchError::AmbiguousGoal { .. }));
                prop_assert!(refused);
            }
        }
    }

    #[test]
    fn add_goal_keeps_every_line_and_reads_back(text in plan_text()) {
        let doc = PlanDoc::parse(&text);
        let Ok(new) = doc.add_goal(&new_goal("added-1")) else {
            // Refused only when the plan would swallow the block (never silently written wrong).
            return Ok(());
        };
        let reparsed = PlanDoc::parse(&new);
        prop_assert_eq!(reparsed.goals().len(), doc.goals().len() + 1);
        prop_assert!(reparsed.goal("added-1").is_some());
        // Every original line survives, in order, untouched (bar the terminator of an unterminated last line).
        let mut remaining = new.split_inclusive('\n').map(|l| l.trim_end_matches(['\r', '\n']));
        for line in text.split_inclusive('\n').map(|l| l.trim_end_matches(['\r', '\n'])) {
            prop_assert!(remaining.any(|n| n == line), "lost line {:?}", line);
        }
    }

    #[test]
    fn log_appends_keep_existing_bytes(text in plan_text()) {
        let doc = PlanDoc::parse(&text);
        let new = doc.append_log("event").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let reparsed = PlanDoc::parse(&new);
        let entries = reparsed.log().map(|l| l.entries.len()).unwrap_or_default();
        let before = doc.log().map(|l| l.entries.len()).unwrap_or_default();
        prop_assert_eq!(entries, before + 1);
        if !text.is_empty() {
            prop_assert_eq!(text.ends_with('\n'), new.ends_with('\n'));
            if doc.log().is_none() {
                prop_assert!(new.starts_with(text.trim_end_matches(['\r', '\n'])));
            }
        }
    }
}
