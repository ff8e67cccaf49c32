//! `agency goal`: plan.md goals and their sign-off, end to end in a temporary repository with a real (sh)
//! verify command and a scripted judge.

use crate::support::Repo;

const ACCEPTING_JUDGE: &str = "replies:\n  - role: judge\n    reply: {text: \"Checked value.txt.\\nVERDICT: accept\\nmissing: none\"}\n";
const RAMBLING_JUDGE: &str =
    "replies:\n  - role: judge\n    reply: {text: \"Seems fine to me, probably.\"}\n";

fn write(repo: &Repo, path: &str, text: &str) {
    let full = repo.path().join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

fn commit(repo: &Repo, message: &str) {
    repo.git(&["add", "--all", "--", ".", ":!.agency"]);
    repo.git(&["commit", "-q", "-m", message]);
}

fn plan(repo: &Repo) -> String {
    std::fs::read_to_string(repo.path().join("plan.md")).unwrap()
}

/// A repository whose check fails (`value.txt` says broken) with a committed goal to fix it.
fn project_with_goal() -> Repo {
    let repo = Repo::initialised();
    write(&repo, "value.txt", "broken\n");
    write(&repo, "tests/check.sh", "grep -qx fixed value.txt\n");
    write(&repo, "judge.yaml", ACCEPTING_JUDGE);
    write(&repo, "rambling.yaml", RAMBLING_JUDGE);
    commit(&repo, "a project with a failing check");
    repo.agency(&[
        "goal",
        "add",
        "Fix the value",
        "--done-when",
        "value.txt says fixed",
        "--verify",
        "sh tests/check.sh",
        "--failure-mode",
        "the check is weakened",
        "--subtask",
        "fix it",
    ])
    .success();
    commit(&repo, "plan: fix the value");
    repo
}

#[test]
fn add_list_show_and_log() {
    let repo = project_with_goal();
    let text = plan(&repo);
    assert!(
        text.contains("## Goal: Fix the value\n<!-- id: fix-the-value-1 -->\nstatus: active\n"),
        "{text}"
    );
    assert!(text.contains("verify: sh tests/check.sh\n"));
    let list = repo.agency(&["goal", "list"]).success().stdout();
    assert!(list.starts_with("fix-the-value-1"), "{list}");
    assert!(list.contains("active") && list.contains("0/1") && list.contains("Fix the value"));
    let show = repo
        .agency(&["goal", "show", "fix-the-value-1"])
        .success()
        .stdout();
    assert!(show.contains("done_when  value.txt says fixed"), "{show}");
    assert!(show.contains("  - the check is weakened"));
    repo.agency(&["goal", "log", "started on the value"]).success();
    let log = repo.agency(&["goal", "log"]).success().stdout();
    assert!(
        log.contains("fix-the-value-1 added") && log.contains("started on the value"),
        "{log}"
    );
    let missing = repo.agency(&["goal", "show", "nope"]).fails_with(4);
    assert!(
        missing
            .stderr()
            .contains("no goal with id \"nope\"; its goals are fix-the-value-1")
    );
}

#[test]
fn complete_rejects_failing_work_then_signs_off_the_fix() {
    let repo = project_with_goal();
    // Claimed done with the check still failing: verify rejects, no judge is asked.
    let rejected = repo
        .agency(&[
            "goal",
            "complete",
            "fix-the-value-1",
            "--path",
            "value.txt",
            "--script",
            "judge.yaml",
        ])
        .fails_with(3);
    let out = rejected.stdout();
    assert!(out.contains("rejected   fix-the-value-1 (by verify)"), "{out}");
    assert!(out.contains("judge      not asked"), "{out}");
    assert!(plan(&repo).contains("status: active"));
    assert!(plan(&repo).contains("fix-the-value-1 sign-off rejected at "));
    // A fix left uncommitted does not count.
    write(&repo, "value.txt", "fixed\n");
    repo.agency(&[
        "goal",
        "complete",
        "fix-the-value-1",
        "--path",
        "value.txt",
        "--script",
        "judge.yaml",
    ])
    .fails_with(3);
    commit(&repo, "fix the value");
    let accepted = repo
        .agency(&[
            "goal",
            "complete",
            "fix-the-value-1",
            "--evidence",
            "value.txt now says fixed",
            "--quote",
            "value.txt:fixed",
            "--script",
            "judge.yaml",
        ])
        .success()
        .stdout();
    assert!(accepted.contains("verify     exit 0"), "{accepted}");
    assert!(accepted.contains("judge      accept"), "{accepted}");
    assert!(accepted.contains("accepted   fix-the-value-1"), "{accepted}");
    let text = plan(&repo);
    assert!(text.contains("status: done"), "{text}");
    assert!(text.contains("fix-the-value-1 signed off at "), "{text}");
    let list = repo.agency(&["goal", "list"]).success().stdout();
    assert!(list.contains("[signed off]"), "{list}");
    let again = repo
        .agency(&[
            "goal",
            "complete",
            "fix-the-value-1",
            "--path",
            "value.txt",
            "--script",
            "judge.yaml",
        ])
        .fails_with(5);
    assert!(again.stderr().contains("already signed off"));
}

#[test]
fn a_protected_edit_is_rejected_before_the_judge() {
    let repo = project_with_goal();
    write(&repo, "tests/check.sh", "true\n");
    commit(&repo, "simplify the check");
    let out = repo
        .agency(&[
            "goal",
            "complete",
            "fix-the-value-1",
            "--path",
            "value.txt",
            "--script",
            "judge.yaml",
        ])
        .fails_with(3)
        .stdout();
    assert!(out.contains("rejected   fix-the-value-1 (by checks)"), "{out}");
    assert!(
        out.contains("tests/check.sh modified since the goal's base"),
        "{out}"
    );
}

#[test]
fn a_judge_without_a_verdict_is_inconclusive_and_blocks() {
    let repo = project_with_goal();
    write(&repo, "value.txt", "fixed\n");
    commit(&repo, "fix the value");
    let out = repo
        .agency(&[
            "goal",
            "complete",
            "fix-the-value-1",
            "--path",
            "value.txt",
            "--script",
            "rambling.yaml",
        ])
        .fails_with(3)
        .stdout();
    assert!(out.contains("INCONCLUSIVE fix-the-value-1"), "{out}");
    assert!(plan(&repo).contains("status: active"));
    assert!(plan(&repo).contains("sign-off INCONCLUSIVE"));
}

#[test]
fn a_goal_ticked_done_by_hand_is_unsigned_and_cancel_logs_why() {
    let repo = project_with_goal();
    let text = plan(&repo).replace("status: active", "status: done");
    std::fs::write(repo.path().join("plan.md"), text).unwrap();
    let list = repo.agency(&["goal", "list"]).success().stdout();
    assert!(list.contains("done") && list.contains("[UNSIGNED]"), "{list}");
    let show = repo
        .agency(&["goal", "show", "fix-the-value-1"])
        .success()
        .stdout();
    assert!(show.contains("status     done (UNSIGNED)"), "{show}");
    let text = plan(&repo).replace("status: done", "status: active");
    std::fs::write(repo.path().join("plan.md"), text).unwrap();
    repo.agency(&["goal", "cancel", "fix-the-value-1", "--reason", "not needed"])
        .success();
    let text = plan(&repo);
    assert!(
        text.contains("status: cancelled") && text.contains("fix-the-value-1 cancelled: not needed"),
        "{text}"
    );
}

#[test]
fn a_contract_softened_after_it_was_agreed_is_rejected() {
    let repo = project_with_goal();
    let text = plan(&repo).replace("verify: sh tests/check.sh", "verify: true");
    std::fs::write(repo.path().join("plan.md"), text).unwrap();
    commit(&repo, "plan: simpler verify");
    let out = repo
        .agency(&[
            "goal",
            "complete",
            "fix-the-value-1",
            "--path",
            "value.txt",
            "--script",
            "judge.yaml",
        ])
        .fails_with(3)
        .stdout();
    // The agreed verify still runs (and fails), and the change itself is listed.
    assert!(out.contains("verify     exit 1"), "{out}");
    assert!(
        out.contains("the contract's verify changed since the goal was agreed"),
        "{out}"
    );
}

#[test]
fn without_a_judge_model_verify_still_runs_and_the_sign_off_is_inconclusive() {
    let repo = project_with_goal();
    write(&repo, "value.txt", "fixed\n");
    commit(&repo, "fix the value");
    // No --script and no API key in the environment: the judge cannot be built. (Where a key is set, this
    // would call the real model: not here.)
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        return;
    }
    let run = repo
        .agency(&["goal", "complete", "fix-the-value-1", "--path", "value.txt"])
        .fails_with(3);
    let out = run.stdout();
    assert!(out.contains("verify     exit 0"), "{out}");
    assert!(
        out.contains("INCONCLUSIVE fix-the-value-1: the judge could not run"),
        "{out}"
    );
    assert!(
        run.stderr().contains("the judge gave no verdict"),
        "{}",
        run.stderr()
    );
}

#[test]
fn an_id_two_goals_share_is_refused_as_ambiguous() {
    let repo = project_with_goal();
    let mut text = plan(&repo);
    text.push_str(
        "\n## Goal: A copy\n<!-- id: fix-the-value-1 -->\nstatus: active\ndone_when: something else\n",
    );
    write(&repo, "plan.md", &text);
    commit(&repo, "plan: a second goal with the same id");
    let heading = |title: &str| {
        text.lines()
            .position(|l| l == format!("## Goal: {title}"))
            .map(|i| i + 1)
            .unwrap()
    };
    let (first, second) = (heading("Fix the value"), heading("A copy"));
    let lines = format!("lines {first} and {second}");

    let list = repo.agency(&["goal", "list"]).success();
    let expected = format!("[ambiguous id: goals at lines {first}, {second}]");
    assert_eq!(list.stdout().matches(&expected).count(), 2, "{}", list.stdout());

    for args in [
        vec![
            "goal",
            "complete",
            "fix-the-value-1",
            "--evidence",
            "e",
            "--script",
            "judge.yaml",
        ],
        vec!["goal", "cancel", "fix-the-value-1", "--reason", "dup"],
        vec!["goal", "show", "fix-the-value-1"],
    ] {
        let refused = repo.agency(&args).fails_with(4);
        assert!(
            refused
                .stderr()
                .contains("goal id \"fix-the-value-1\" is ambiguous")
                && refused.stderr().contains(&lines),
            "{args:?}: {}",
            refused.stderr()
        );
    }
    assert_eq!(plan(&repo), text, "nothing was patched");
}

#[test]
fn a_checkbox_indented_under_failure_modes_reaches_the_judge_as_a_failure_mode() {
    let repo = Repo::initialised();
    write(
        &repo,
        "plan.md",
        "## Goal: Cache\n<!-- id: cache-1 -->\nstatus: active\ndone_when: fast\nfailure_modes:\n  - [ ] cache silently bypassed\n- [ ] wire client\n",
    );
    let show = repo.agency(&["goal", "show", "cache-1"]).success().stdout();
    assert!(
        show.contains("failure_modes\n  - [ ] cache silently bypassed\n"),
        "{show}"
    );
    assert!(show.contains("subtasks   0/1\n  - [ ] wire client\n"), "{show}");
}

#[test]
fn archive_moves_cancelled_goals_keeps_unsigned_done_ones_and_new_goals_stay_out_of_it() {
    let repo = Repo::initialised();
    for title in ["Keep working", "Hand ticked", "Dropped"] {
        repo.agency(&["goal", "add", title, "--done-when", "x"]).success();
    }
    let text = plan(&repo).replacen(
        "<!-- id: hand-ticked-1 -->\nstatus: active",
        "<!-- id: hand-ticked-1 -->\nstatus: done",
        1,
    );
    write(&repo, "plan.md", &text);
    repo.agency(&["goal", "cancel", "dropped-1", "--reason", "not needed"])
        .success();
    let out = repo.agency(&["goal", "archive"]).success().stdout();
    assert!(out.contains("archived   dropped-1"), "{out}");
    let text = plan(&repo);
    let (live, archived) = text
        .split_once("## Archive\n")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(archived.contains("<!-- id: dropped-1 -->"), "{text}");
    // Done by hand, no sign-off record: not archived, still in sight.
    assert!(live.contains("<!-- id: hand-ticked-1 -->") && live.contains("<!-- id: keep-working-1 -->"));
    assert!(live.contains("archived dropped-1"), "{text}");
    // Nothing more to archive; a new goal goes before the log, not into the archive.
    let again = repo.agency(&["goal", "archive"]).success().stdout();
    assert!(again.contains("nothing"), "{again}");
    repo.agency(&["goal", "add", "Next", "--done-when", "y"])
        .success();
    let text = plan(&repo);
    let (live, archived) = text.split_once("## Archive\n").unwrap();
    assert!(
        live.contains("<!-- id: next-1 -->") && !archived.contains("next-1"),
        "{text}"
    );
    // Every goal still parses: the ids stay unique and known.
    let list = repo.agency(&["goal", "list"]).success().stdout();
    assert!(list.contains("dropped-1") && list.contains("next-1"), "{list}");
}
