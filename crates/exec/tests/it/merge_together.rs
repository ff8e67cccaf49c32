//! Slices merged into their branch together, with one merge commit ([`MergeChain::merge_together`]).

use std::path::PathBuf;

use agency_exec::{CommitOutcome, MergeChain, MergeOutcome, Repo};

use crate::git::{git_calls, logging_git};
use crate::support::{TestRepo, write};

/// Makes the branch `agency/<name>` from `base` with one commit writing `contents` to `file`; its tip.
fn slice(t: &TestRepo, name: &str, base: &str, file: &str, contents: &str) -> String {
    let wt = t
        .repo
        .add_worktree(&t.worktree_path(name), &format!("agency/{name}"), base)
        .unwrap();
    write(wt.root(), file, contents);
    match wt.commit_all(name).unwrap() {
        CommitOutcome::Committed { rev } => rev,
        CommitOutcome::NothingToCommit => panic!("expected a commit"),
    }
}

fn together(chain: &mut MergeChain<'_>, from: &[&str]) -> Option<Vec<MergeOutcome>> {
    chain
        .merge_together(from, |i| format!("slice {}", from[i]))
        .unwrap()
}

fn tree(repo: &Repo, rev: &str) -> String {
    let output = repo.run_git(&["rev-parse", &format!("{rev}^{{tree}}")]).unwrap();
    output.stdout.text().trim().to_owned()
}

/// Slices forked from an older commit of the branch, one of them merged already: the others merge in one
/// commit whose parents are the branch and each of them, with the tree the chain makes of them one by one,
/// in a few git processes whatever their number.
#[test]
fn slices_merged_together_make_one_commit_with_the_tree_one_by_one_merges_make() {
    let t = TestRepo::new();
    write(t.repo.root(), "shared.txt", "one\ntwo\nthree\nfour\nfive\nsix\n");
    let base = match t.repo.commit_all("shared").unwrap() {
        CommitOutcome::Committed { rev } => rev,
        CommitOutcome::NothingToCommit => panic!("expected a commit"),
    };
    slice(&t, "early", "main", "early.txt", "early\n");
    let a = slice(
        &t,
        "a",
        "main",
        "shared.txt",
        "ONE\ntwo\nthree\nfour\nfive\nsix\n",
    );
    let b = slice(
        &t,
        "b",
        "main",
        "shared.txt",
        "one\ntwo\nthree\nfour\nfive\nSIX\n",
    );
    let c = slice(&t, "c", "main", "c.txt", "c\n");
    let d = slice(&t, "d", "main", "d/d.txt", "d\n");
    // The branch has moved on since the slices forked: `early` is merged, and a commit of its own.
    t.repo.create_branch("work", &base).unwrap();
    t.repo.create_branch("chained", &base).unwrap();
    for branch in ["work", "chained"] {
        let mut chain = t.repo.merge_chain(branch, &t.worktree_path("scratch")).unwrap();
        assert!(matches!(
            chain.merge("agency/early", "merge early").unwrap(),
            MergeOutcome::Merged { .. }
        ));
        chain.settle().unwrap();
    }
    let wt = t
        .repo
        .add_worktree(&t.worktree_path("work"), "side", "work")
        .unwrap();
    write(wt.root(), "work.txt", "work\n");
    let CommitOutcome::Committed { rev: side } = wt.commit_all("side").unwrap() else {
        panic!("expected a commit")
    };
    for branch in ["work", "chained"] {
        t.repo
            .run_git(&["update-ref", &format!("refs/heads/{branch}"), &side])
            .unwrap();
    }
    t.repo.remove_worktree(&t.worktree_path("work"), true).unwrap();

    let (repo, log) = logging_git(&t);
    let from = ["agency/a", "agency/early", "agency/b", "agency/c", "agency/d"];
    let mut chain = repo.merge_chain("work", &t.worktree_path("scratch")).unwrap();
    git_calls(&log);
    let outcomes = together(&mut chain, &from).expect("merged together");
    let Some(MergeOutcome::Merged { rev }) = outcomes.first().cloned() else {
        panic!("{outcomes:?}")
    };
    assert_eq!(
        outcomes,
        [
            MergeOutcome::Merged { rev: rev.clone() },
            MergeOutcome::AlreadyUpToDate,
            MergeOutcome::Merged { rev: rev.clone() },
            MergeOutcome::Merged { rev: rev.clone() },
            MergeOutcome::Merged { rev: rev.clone() },
        ]
    );
    assert_eq!(
        repo.rev_parse("work").unwrap(),
        side,
        "not moved before the settle"
    );
    chain.settle().unwrap();
    // The four branches onto the target, then two merges of two, then one of the two results. (The log
    // has a line per line of the commit's message, and the test's own `rev-parse`.)
    let calls: Vec<String> = git_calls(&log)
        .into_iter()
        .filter(|c| !["version", "rev-parse", "", "slice"].contains(&c.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            "rev-list",
            "merge-tree",
            "merge-tree",
            "merge-tree",
            "commit-tree",
            "update-ref"
        ]
    );
    assert_eq!(repo.rev_parse("work").unwrap(), rev);
    let info = repo.commit_info(&rev).unwrap();
    assert_eq!(info.parents, [side.clone(), a, b, c, d]);
    assert_eq!(info.subject, "merge 4 branches into work");
    let body = repo.run_git(&["log", "-1", "--format=%b", &rev]).unwrap();
    assert_eq!(
        body.stdout.text().trim(),
        "slice agency/a\nslice agency/b\nslice agency/c\nslice agency/d"
    );
    let reflog = repo.run_git(&["reflog", "-1", "--format=%gs", "work"]).unwrap();
    assert_eq!(
        reflog.stdout.text().trim(),
        "merge 4 branches: agency/a, agency/b, agency/c, agency/d"
    );

    let mut one_by_one = repo.merge_chain("chained", &t.worktree_path("scratch")).unwrap();
    for branch in from {
        one_by_one.merge(branch, branch).unwrap();
    }
    one_by_one.settle().unwrap();
    assert_eq!(tree(&repo, "work"), tree(&repo, "chained"));
    assert_eq!(
        repo.file_at("work", "shared.txt".as_ref()).unwrap().unwrap(),
        b"ONE\ntwo\nthree\nfour\nfive\nSIX\n"
    );
    assert!(repo.file_at("work", "work.txt".as_ref()).unwrap().is_some());
    assert!(repo.file_at("work", "early.txt".as_ref()).unwrap().is_some());

    // Merged again, every one is in already: nothing is made.
    let outcomes = together(&mut chain, &from).expect("all up to date");
    assert_eq!(outcomes, vec![MergeOutcome::AlreadyUpToDate; 5]);
    chain.settle().unwrap();
    assert_eq!(repo.rev_parse("work").unwrap(), rev);
}

/// Two slices sharing a commit (one forked from the other's branch), two that conflict, one that conflicts
/// with the branch, or fewer than three: none is merged together, nothing is made, and the chain merges
/// them one by one as before.
#[test]
fn slices_that_share_a_commit_or_conflict_are_left_to_merge_one_by_one() {
    let t = TestRepo::new();
    write(t.repo.root(), "shared.txt", "base\n");
    match t.repo.commit_all("shared").unwrap() {
        CommitOutcome::Committed { .. } => {}
        CommitOutcome::NothingToCommit => panic!("expected a commit"),
    }
    slice(&t, "a", "main", "a.txt", "a\n");
    slice(&t, "after-a", "agency/a", "after.txt", "after a\n");
    slice(&t, "b", "main", "b.txt", "b\n");
    slice(&t, "x", "main", "shared.txt", "x\n");
    slice(&t, "y", "main", "shared.txt", "y\n");
    t.repo.create_branch("work", "main").unwrap();
    let wt = t
        .repo
        .add_worktree(&t.worktree_path("work"), "side", "work")
        .unwrap();
    write(wt.root(), "shared.txt", "the branch's own\n");
    let CommitOutcome::Committed { rev: moved } = wt.commit_all("side").unwrap() else {
        panic!("expected a commit")
    };
    t.repo
        .run_git(&["update-ref", "refs/heads/moved", &moved])
        .unwrap();
    t.repo.remove_worktree(&t.worktree_path("work"), true).unwrap();

    let (repo, log) = logging_git(&t);
    let start = repo.rev_parse("work").unwrap();
    let mut chain = repo.merge_chain("work", &t.worktree_path("scratch")).unwrap();
    git_calls(&log);
    assert_eq!(together(&mut chain, &["agency/a", "agency/b"]), None);
    assert!(
        git_calls(&log).iter().all(|c| c == "version"),
        "two merge one by one without asking git"
    );
    assert_eq!(
        together(&mut chain, &["agency/a", "agency/after-a", "agency/b"]),
        None
    );
    assert_eq!(together(&mut chain, &["agency/a", "agency/x", "agency/y"]), None);
    let mut onto_moved = repo.merge_chain("moved", &t.worktree_path("scratch")).unwrap();
    assert_eq!(
        together(&mut onto_moved, &["agency/a", "agency/b", "agency/x"]),
        None
    );
    onto_moved.settle().unwrap();
    chain.settle().unwrap();
    assert_eq!(repo.rev_parse("work").unwrap(), start);
    assert_eq!(repo.rev_parse("moved").unwrap(), moved);

    // The chain goes on as if nothing had been tried.
    for branch in ["agency/a", "agency/after-a", "agency/b"] {
        assert!(matches!(
            chain.merge(branch, branch).unwrap(),
            MergeOutcome::Merged { .. }
        ));
    }
    match chain.merge("agency/x", "x").unwrap() {
        MergeOutcome::Merged { .. } => {}
        other => panic!("{other:?}"),
    }
    match chain.merge("agency/y", "y").unwrap() {
        MergeOutcome::Conflict { files } => assert_eq!(files, [PathBuf::from("shared.txt")]),
        other => panic!("{other:?}"),
    }
    chain.settle().unwrap();
    assert!(repo.file_at("work", "after.txt".as_ref()).unwrap().is_some());
}
