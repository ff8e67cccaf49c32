//! A brief's worktree on resume: reused when it is whole, made again when a killed runner's git left only
//! part of it behind.

use agency_core::brief::BriefPlacement;
use agency_core::{BriefId, NewBrief, RunId, Tier};
use agency_engine::branches::{KnownBranches, RunBranches};
use agency_exec::{GitOptions, Repo, WorktreeSweep};

fn brief(run: RunId) -> agency_core::Brief {
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
        id: BriefId::new(),
        run,
        parent: None,
        goal_anchor: "Fix it.".into(),
        retry_budget: 1,
        depends_on: vec![],
        created_at: chrono::Utc::now(),
    })
}

#[test]
fn a_half_made_worktree_is_cleared_and_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("README"), "base\n").unwrap();
    let repo = Repo::init(&root, "main", GitOptions::default()).unwrap();
    repo.commit_all("base").unwrap();
    let run = RunId::new();
    let branches = RunBranches::new(
        repo.clone(),
        run,
        &dir.path().join("wt"),
        KnownBranches::default(),
        WorktreeSweep::new(repo.clone()),
    );
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
