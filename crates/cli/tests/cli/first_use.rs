//! What a new user meets first: a run in a repository with no commit, or with changes not committed, is
//! told in one line what agents will start from.

use std::process::Command;

use crate::support::Repo;

/// `agency run "goal"` with no model key, so nothing beyond the start-up checks can happen.
fn run_without_a_key(repo: &Repo) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["run", "Add a greeting"])
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        .env_remove("ANTHROPIC_API_KEY")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn a_repository_with_no_commit_is_refused_in_one_line() {
    let repo = Repo::initialised();
    let out = run_without_a_key(&repo);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no commit yet"), "{err}");
    assert!(err.contains("git commit"), "{err}");
    assert!(!err.contains("rev-parse"), "a git error leaked: {err}");
}

#[test]
fn uncommitted_changes_are_named_as_unseen_by_the_agents() {
    let repo = Repo::initialised();
    repo.commit("start");
    std::fs::write(repo.path().join("notes.txt"), "mine\n").unwrap();
    let err = String::from_utf8_lossy(&run_without_a_key(&repo).stderr).to_string();
    assert!(
        err.contains("1 uncommitted change(s)") && err.contains("start from HEAD"),
        "{err}"
    );
}

#[test]
fn a_clean_tree_gets_no_warning() {
    let repo = Repo::initialised();
    repo.commit("start");
    let err = String::from_utf8_lossy(&run_without_a_key(&repo).stderr).to_string();
    assert!(!err.contains("uncommitted"), "{err}");
}
