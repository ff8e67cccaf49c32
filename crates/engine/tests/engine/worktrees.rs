//! A brief's worktree and branch: its own even when another brief's id begins alike, reused on resume when
//! it is whole (where an earlier build recorded it, too), made again when a killed runner's git left only
//! part of it behind.

use agency_core::brief::BriefPlacement;
use agency_core::{BriefId, NewBrief, RunId, Tier};
use agency_engine::branches::{KnownBranches, RunBranches, unused_run_id};
use agency_exec::{GitOptions, Repo, WorktreeSweep};

fn brief(run: RunId) -> agency_core::Brief {
    brief_with_id(run, BriefId::new())
}

fn brief_with_id(run: RunId, id: BriefId) -> agency_core::Brief {
    NewBrief {
        tier: Tier::T4,
        workstream: "ws".into(),
        title: "fix it".into(),
        personality: None,
        instructions: "Fix it.".into(),
        inputs: vec![],
        variety: None,
        contract: None,
        depends_on: vec![],
    }
    .into_brief(BriefPlacement {
        id,
        run,
        parent: None,
        goal_anchor: "Fix it.".into(),
        retry_budget: 1,
        depends_on: vec![],
        created_at: chrono::Utc::now(),
    })
}

/// A repository with one commit on `main`, and a run's branches in it.
fn run_branches(dir: &std::path::Path) -> (Repo, RunId, RunBranches) {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("README"), "base\n").unwrap();
    let repo = Repo::init(&root, "main", GitOptions::default()).unwrap();
    repo.commit_all("base").unwrap();
    let run = RunId::new();
    let branches = RunBranches::new(
        repo.clone(),
        run,
        &dir.join("wt"),
        KnownBranches::default(),
        WorktreeSweep::new(repo.clone()),
    );
    (repo, run, branches)
}

#[test]
fn briefs_whose_short_ids_match_work_in_their_own_branch_and_worktree() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, run, branches) = run_branches(dir.path());
    // Two ids whose short forms (their last 8 hex digits) match, as two of a 100,000-brief run's do about
    // once, in one workstream.
    let a = brief_with_id(
        run,
        BriefId("01934a5b-8024-7b26-a05c-df8dee75b930".parse().unwrap()),
    );
    let b = brief_with_id(
        run,
        BriefId("01934a5b-8028-7cb2-ad2b-e070ee75b930".parse().unwrap()),
    );
    assert_eq!(a.id.short(), b.id.short());

    let (branch_a, path_a) = branches.prepare_worktree(&a, "main").unwrap();
    std::fs::write(path_a.join("a.txt"), "a's work\n").unwrap();
    let (branch_b, path_b) = branches.prepare_worktree(&b, "main").unwrap();
    assert_ne!(branch_a, branch_b);
    assert_ne!(path_a, path_b);
    assert!(
        branch_b.ends_with("/01934a5b80287cb2ad2be070ee75b930"),
        "{branch_b}"
    );
    assert!(!path_b.join("a.txt").exists(), "b does not start in a's worktree");
    assert_eq!(
        repo.open_linked(&path_b).unwrap().current_branch().unwrap(),
        Some(branch_b)
    );
}

#[test]
fn a_brief_recorded_by_an_earlier_build_resumes_in_its_short_named_worktree() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, run, branches) = run_branches(dir.path());
    let mut brief = brief(run);
    // What builds before 2026-11-25 made and recorded: both named by the brief's 8-digit short id.
    let branch = format!("agency/{}/ws/{}", run.short(), brief.id.short());
    let path = dir.path().join("wt").join(run.short()).join(brief.id.short());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    repo.add_worktree(&path, &branch, "main").unwrap();
    std::fs::write(path.join("work.txt"), "uncommitted\n").unwrap();
    brief.branch = Some(branch.clone());
    brief.worktree = Some(path.display().to_string());

    assert_eq!(branches.brief(&brief), branch);
    assert_eq!(branches.worktree_path(&brief), path);
    assert_eq!(
        branches.prepare_worktree(&brief, "main").unwrap(),
        (branch, path.clone())
    );
    assert!(
        path.join("work.txt").exists(),
        "its agent's work is where it left it"
    );
    assert!(branches.commit_brief(&brief).unwrap(), "and committed from there");
}

#[test]
fn a_half_made_worktree_is_cleared_and_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, run, branches) = run_branches(dir.path());
    let brief = brief(run);

    // A whole worktree from before the kill is reused as it is.
    let (branch, path) = branches.prepare_worktree(&brief, "main").unwrap();
    std::fs::write(path.join("work.txt"), "uncommitted\n").unwrap();
    assert_eq!(branches.prepare_worktree(&brief, "main").unwrap().1, path);
    assert!(
        path.join("work.txt").exists(),
        "a resumed agent keeps its uncommitted work"
    );

    // What a SIGKILL in the middle of `git worktree add` or `remove` leaves: files, no `.git`.
    std::fs::remove_file(path.join(".git")).unwrap();
    let (again, path_again) = branches.prepare_worktree(&brief, "main").unwrap();
    assert_eq!(
        (again.as_str(), path_again.as_path()),
        (branch.as_str(), path.as_path())
    );
    assert!(path.join(".git").is_file(), "made again on its existing branch");
    assert!(!path.join("work.txt").exists());
    assert_eq!(
        repo.open_linked(&path).unwrap().current_branch().unwrap(),
        Some(branch)
    );
}

#[test]
fn a_new_run_never_takes_a_short_id_whose_branches_are_still_there() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, kept, branches) = run_branches(dir.path());
    // A finished run's integration branch, kept until `agency gc`.
    repo.create_branch(&branches.integration(), "main").unwrap();
    // The next id drawn shares the kept run's 8 digits, then one that does not.
    let same8 = RunId(
        format!("01930000-0000-7000-8000-0000{}", kept.short())
            .parse()
            .unwrap(),
    );
    let other = RunId::new();
    assert_eq!(same8.short(), kept.short());
    let mut draws = vec![other, same8];
    assert_eq!(unused_run_id(&repo, || draws.pop().unwrap()).unwrap(), other);
    assert!(draws.is_empty(), "the clashing id was drawn, then passed over");

    // An id source that keeps clashing is an error, not an endless loop.
    let err = unused_run_id(&repo, || same8).unwrap_err();
    assert!(err.to_string().contains("already has under `agency/`"), "{err}");
}
