//! Worktrees removed in batches ([`WorktreeSweep`]): real git, real `rm`. A binary of its own, its tests
//! one at a time, so the count of processes started is theirs alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use agency_exec::process::started_count;
use agency_exec::{GitOptions, Repo, WorktreeSweep};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A repository with one commit under a fresh directory, git isolated from the machine's configuration.
fn repo(dir: &Path) -> Repo {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let options = GitOptions {
        home: Some(home),
        ..GitOptions::default()
    };
    let repo = Repo::init(&dir.join("repo"), "main", options).unwrap();
    std::fs::write(repo.root().join("README"), "x\n").unwrap();
    repo.commit_all("first").unwrap();
    repo
}

/// The linked worktrees git knows of.
fn linked(repo: &Repo) -> Vec<PathBuf> {
    repo.list_worktrees()
        .unwrap()
        .into_iter()
        .filter(|w| !w.is_main)
        .map(|w| w.path)
        .collect()
}

/// The entries under `<common dir>/worktrees/`.
fn entries(repo: &Repo) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.common_dir().join("worktrees"))
        .map(|dir| {
            dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_batch_of_worktrees_goes_with_one_process() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = repo(&root);
    let trees = root.join("trees");
    let paths: Vec<PathBuf> = ["one", "two", "three"]
        .iter()
        .map(|name| trees.join(name))
        .collect();
    repo.add_worktree(&paths[0], "one", "main").unwrap();
    repo.add_detached_worktree(&paths[1], "main").unwrap();
    repo.add_worktree(&paths[2], "three", "main").unwrap();
    // Uncommitted work and an untracked file go too, as with `git worktree remove --force`.
    std::fs::write(paths[0].join("README"), "changed\n").unwrap();
    std::fs::write(paths[2].join("new.txt"), "new\n").unwrap();
    assert_eq!(entries(&repo), ["one", "three", "two"]);

    let sweep = WorktreeSweep::new(repo.clone());
    for path in &paths {
        sweep.defer(path.clone());
    }
    sweep.defer(paths[0].clone());
    assert_eq!(sweep.waiting(), 3, "a path deferred twice is removed once");
    let before = started_count();
    sweep.sweep().unwrap();
    assert_eq!(started_count() - before, 1, "one `rm` for the three");

    assert!(paths.iter().all(|p| !p.exists()));
    assert!(entries(&repo).is_empty(), "their entries went with them");
    assert!(linked(&repo).is_empty(), "git knows of none of them");
    assert_eq!(sweep.waiting(), 0);
    assert!(repo.branch_exists("one").unwrap() && repo.branch_exists("three").unwrap());
    // The names are free again, as after `git worktree remove`.
    repo.add_worktree(&paths[0], "one-again", "main").unwrap();
    assert_eq!(linked(&repo), [paths[0].clone()]);

    // Nothing deferred: no process at all.
    let before = started_count();
    sweep.sweep().unwrap();
    assert_eq!(started_count(), before);
}

/// An agent can rewrite the `.git` file of its own worktree. The sweep never follows it: not to a
/// directory elsewhere, not to another worktree's entry. The worktree is still removed, with the entry git
/// recorded for it.
#[test]
fn a_rewritten_git_file_is_not_followed() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = repo(&root);
    let trees = root.join("trees");
    let (away, other, bystander) = (trees.join("away"), trees.join("other"), trees.join("bystander"));
    for path in [&away, &other, &bystander] {
        repo.add_detached_worktree(path, "main").unwrap();
    }
    // Somewhere else, dressed as an entry that names `away` back.
    let victim = root.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(
        victim.join("gitdir"),
        format!("{}\n", away.join(".git").display()),
    )
    .unwrap();
    std::fs::write(victim.join("precious"), "keep\n").unwrap();
    std::fs::write(away.join(".git"), format!("gitdir: {}\n", victim.display())).unwrap();
    // Another worktree's entry, and one that climbs out of `worktrees/`.
    let bystanders_entry = repo.common_dir().join("worktrees/bystander");
    std::fs::write(
        other.join(".git"),
        format!("gitdir: {}\n", bystanders_entry.display()),
    )
    .unwrap();

    let sweep = WorktreeSweep::new(repo.clone());
    sweep.defer(away.clone());
    sweep.defer(other.clone());
    let before = started_count();
    sweep.sweep().unwrap();
    assert_eq!(started_count() - before, 1);

    assert_eq!(
        std::fs::read_to_string(victim.join("precious")).unwrap(),
        "keep\n"
    );
    assert!(victim.join("gitdir").exists());
    assert!(!away.exists() && !other.exists());
    assert_eq!(entries(&repo), ["bystander"], "only their own entries went");
    assert_eq!(linked(&repo), std::slice::from_ref(&bystander));
    let opened = repo.open_linked(&bystander).unwrap();
    assert_eq!(opened.head_rev().unwrap(), repo.head_rev().unwrap());
}

/// What the sweep cannot be sure of is left to git, one worktree at a time, as before: a locked worktree
/// (which git refuses with a single `--force`), one whose directory is already gone (pruned). One whose
/// `.git` names an entry that climbs out of `worktrees/` goes with the entry git recorded for it.
#[test]
fn what_is_not_certain_is_left_to_git() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = repo(&root);
    let trees = root.join("trees");
    let (locked, gone, climber) = (trees.join("locked"), trees.join("gone"), trees.join("climber"));
    for path in [&locked, &gone, &climber] {
        repo.add_detached_worktree(path, "main").unwrap();
    }
    repo.run_git(&["worktree", "lock", locked.to_str().unwrap()])
        .unwrap();
    // `worktrees/..` is the common directory itself: given a `gitdir` file naming the worktree back, a
    // check of the parent directory alone would take it for the worktree's entry (and `rm` would refuse
    // it, leaving the real entry behind).
    std::fs::write(
        repo.common_dir().join("gitdir"),
        format!("{}\n", climber.join(".git").display()),
    )
    .unwrap();
    std::fs::write(
        climber.join(".git"),
        format!("gitdir: {}/worktrees/..\n", repo.common_dir().display()),
    )
    .unwrap();

    let sweep = WorktreeSweep::new(repo.clone());
    sweep.defer(locked.clone());
    sweep.defer(climber.clone());
    let before = started_count();
    let err = sweep.sweep().unwrap_err();
    assert!(err.to_string().contains("locked"), "{err}");
    // The climber in the batch, the locked one to git, which refused it.
    assert_eq!(started_count() - before, 2);
    assert!(
        repo.common_dir().join("HEAD").exists(),
        "the common directory is whole"
    );
    assert!(!climber.exists());
    assert_eq!(entries(&repo), ["gone", "locked"], "the climber's own entry went");
    assert_eq!(sweep.waiting(), 0, "a failed removal is not tried again");

    // A directory already gone: git prunes its entry.
    std::fs::remove_dir_all(&gone).unwrap();
    sweep.defer(gone.clone());
    let before = started_count();
    sweep.sweep().unwrap();
    assert_eq!(started_count() - before, 1);
    assert_eq!(entries(&repo), ["locked"]);
    assert_eq!(linked(&repo), [locked]);
}

/// A worktree wanted again before the sweep (a brief that starts over in it) is taken off the list; what
/// is still waiting when the last clone of the sweep goes is removed then.
#[test]
fn withdrawn_worktrees_stay_and_the_last_clone_sweeps() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = repo(&root);
    let (kept, dropped) = (root.join("trees/kept"), root.join("trees/dropped"));
    repo.add_detached_worktree(&kept, "main").unwrap();
    repo.add_detached_worktree(&dropped, "main").unwrap();

    let sweep = WorktreeSweep::new(repo.clone());
    let clone = sweep.clone();
    sweep.defer(kept.clone());
    clone.defer(dropped.clone());
    assert!(sweep.withdraw(&kept));
    assert!(!sweep.withdraw(&kept));
    drop(sweep);
    assert!(dropped.exists(), "a clone still holds the list");
    drop(clone);
    assert!(!dropped.exists());
    assert_eq!(linked(&repo), [kept]);
}
