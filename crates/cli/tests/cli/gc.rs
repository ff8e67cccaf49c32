//! `agency gc`: finished runs lose their worktrees and branches (a succeeded run keeps its integration
//! branch unless `--all`); runs still going are untouched; `--dry-run` changes nothing.

use agency_core::RunId;
use agency_store::{Blackboard, NewRun, RunStatus, SqliteBlackboard};

use crate::support::Repo;

fn branches(repo: &Repo) -> Vec<String> {
    repo.git_output(&["for-each-ref", "--format=%(refname:short)", "refs/heads/agency/"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// A run with `status` on the blackboard; returns its short id.
fn run_with_status(repo: &Repo, status: RunStatus) -> String {
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new("a goal", repo.path().display().to_string()))
        .unwrap();
    store.set_run_status(run.id, None, status).unwrap();
    run.id.short()
}

#[test]
fn finished_runs_are_collected_and_a_succeeded_runs_branch_is_kept() {
    let repo = Repo::initialised();
    repo.commit("base");
    let ok = run_with_status(&repo, RunStatus::Succeeded);
    let failed = run_with_status(&repo, RunStatus::Failed);
    let running = run_with_status(&repo, RunStatus::Running);
    for run in [&ok, &failed, &running] {
        repo.git(&["branch", &format!("agency/{run}/integration")]);
        repo.git(&["branch", &format!("agency/{run}/api/work")]);
    }
    // Brief worktrees: one on its branch, one detached (a reader's), for each run.
    for run in [&ok, &failed, &running] {
        let branch = format!("agency/{run}/api/0000aaaa");
        let on_branch = format!(".agency/worktrees/{run}/0000aaaa");
        let detached = format!(".agency/worktrees/{run}/0000bbbb");
        repo.git(&["worktree", "add", "--quiet", "-b", &branch, &on_branch]);
        repo.git(&["worktree", "add", "--quiet", "--detach", &detached]);
    }
    let before = branches(&repo);
    assert_eq!(before.len(), 9);

    let dry = repo.agency(&["gc", "--dry-run"]).success().stdout();
    assert!(
        dry.contains(&format!("would delete branch agency/{failed}/integration")),
        "{dry}"
    );
    assert!(dry.contains("would remove worktree "), "{dry}");
    assert_eq!(branches(&repo), before, "--dry-run removed something");
    assert!(
        repo.path()
            .join(format!(".agency/worktrees/{ok}/0000aaaa"))
            .exists()
    );

    let out = repo.agency(&["gc"]).success().stdout();
    assert!(
        out.contains(&format!("kept branch agency/{ok}/integration")),
        "{out}"
    );
    let mut left = branches(&repo);
    left.sort();
    let mut want = vec![
        format!("agency/{ok}/integration"),
        format!("agency/{running}/api/0000aaaa"),
        format!("agency/{running}/api/work"),
        format!("agency/{running}/integration"),
    ];
    want.sort();
    assert_eq!(left, want, "{out}");
    for run in [&ok, &failed] {
        assert!(
            !repo.path().join(format!(".agency/worktrees/{run}")).exists(),
            "{out}"
        );
    }
    assert!(
        repo.path()
            .join(format!(".agency/worktrees/{running}/0000aaaa"))
            .exists()
    );
    assert!(
        repo.path()
            .join(format!(".agency/worktrees/{running}/0000bbbb"))
            .exists()
    );
    assert_eq!(out.matches("removed worktree").count(), 4, "{out}");

    let all = repo.agency(&["gc", "--all"]).success().stdout();
    assert!(
        all.contains(&format!("deleted branch agency/{ok}/integration")),
        "{all}"
    );
    assert_eq!(branches(&repo).len(), 3);

    let again = repo.agency(&["gc"]).success().stdout();
    assert_eq!(again.trim(), "nothing to collect");
}

/// A run recorded before 2026-11-26 had a random id, and its branches and worktrees carry the first 8 hex
/// digits of it (then its short form): they are still its.
#[test]
fn a_finished_run_of_an_earlier_build_is_collected_by_its_first_digits() {
    let repo = Repo::initialised();
    repo.commit("base");
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let mut new = NewRun::new("a goal", repo.path().display().to_string());
    new.id = RunId("c0ffee00-1234-4abc-8def-0123456789ab".parse().unwrap());
    let run = store.create_run(new).unwrap();
    store.set_run_status(run.id, None, RunStatus::Failed).unwrap();
    let old8 = run.id.legacy_short();
    assert_eq!(old8, "c0ffee00");
    repo.git(&["branch", &format!("agency/{old8}/integration")]);
    let worktree = format!(".agency/worktrees/{old8}/0000aaaa");
    repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "-b",
        &format!("agency/{old8}/api/0000aaaa"),
        &worktree,
    ]);

    let out = repo.agency(&["gc"]).success().stdout();
    assert!(branches(&repo).is_empty(), "{out}");
    assert!(!repo.path().join(&worktree).exists(), "{out}");
}

/// The number of loose objects, as `git count-objects` counts them.
fn loose_objects(repo: &Repo) -> u64 {
    let counts = repo.git_output(&["count-objects", "-v"]);
    counts
        .lines()
        .find_map(|line| line.strip_prefix("count: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in {counts}"))
}

/// agency's own git commands start no automatic maintenance, so a run leaves its objects loose: `agency gc`
/// runs it, with the repository's config, and `--dry-run` does not.
#[test]
fn gc_runs_gits_automatic_maintenance() {
    let repo = Repo::initialised();
    repo.commit("base");
    // Three thousand objects, far past the threshold, estimated from one of 256 directories. In the
    // foreground on every git (before 2.46 or so the `gc` task detaches by default).
    repo.git(&["config", "gc.auto", "100"]);
    repo.git(&["config", "gc.autoDetach", "false"]);
    std::fs::create_dir(repo.path().join("many")).unwrap();
    for i in 0..3_000 {
        std::fs::write(repo.path().join("many").join(format!("f{i}")), format!("{i}\n")).unwrap();
    }
    repo.git(&["-c", "maintenance.auto=false", "add", "many"]);
    repo.git(&["-c", "maintenance.auto=false", "commit", "--quiet", "-m", "many"]);
    assert!(loose_objects(&repo) >= 3_000);
    let _running = run_with_status(&repo, RunStatus::Running);

    repo.agency(&["gc", "--dry-run"]).success();
    assert!(loose_objects(&repo) >= 3_000, "--dry-run ran the maintenance");
    let out = repo.agency(&["gc"]).success().stdout();
    assert!(!out.contains("git maintenance failed"), "{out}");
    assert_eq!(loose_objects(&repo), 0, "packed: {out}");
}
