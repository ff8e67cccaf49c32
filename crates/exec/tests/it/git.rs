use std::path::PathBuf;

use agency_core::{BriefId, RunId};
use agency_exec::{
    ChangeKind, CommitOutcome, GitError, Identity, MergeOutcome, Repo, brief_branch_name,
    finished_run_leftovers, remove_leftovers,
};

use crate::support::{TestRepo, write};

/// A run id whose short form (its last 8 hex digits) is `short`.
fn run_id(short: &str) -> RunId {
    format!("01930000-0000-7000-8000-0000{short}").parse().unwrap()
}

/// A brief id whose short form is `short`.
fn brief_id(short: &str) -> BriefId {
    format!("01930000-0000-7000-8000-0000{short}").parse().unwrap()
}

fn read(repo: &Repo, relative: &str) -> String {
    std::fs::read_to_string(repo.root().join(relative)).unwrap()
}

fn committed(outcome: CommitOutcome) -> String {
    match outcome {
        CommitOutcome::Committed { rev, .. } => rev,
        CommitOutcome::NothingToCommit => panic!("expected a commit"),
    }
}

#[test]
fn open_finds_the_top_level_and_refuses_non_repositories() {
    let t = TestRepo::new();
    std::fs::create_dir(t.repo.root().join("sub")).unwrap();
    let inner = t.repo.open_other(&t.repo.root().join("sub")).unwrap();
    assert_eq!(inner.root(), t.repo.root());
    assert_eq!(t.repo.current_branch().unwrap().as_deref(), Some("main"));
    assert_eq!(t.repo.head_rev().unwrap().len(), 40);

    let plain = t.dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let err = t.repo.open_other(&plain).unwrap_err();
    assert!(matches!(err, GitError::NotAWorkTree { .. }), "{err}");
    assert!(err.to_string().contains("not a git repository"), "{err}");
    let err = t.repo.open_other(&t.dir.path().join("missing")).unwrap_err();
    assert!(matches!(err, GitError::NotAWorkTree { .. }), "{err}");
}

#[test]
fn commits_on_behalf_use_the_agency_identity_and_report_nothing_to_commit() {
    let t = TestRepo::new();
    assert_eq!(
        t.repo.commit_all("again").unwrap(),
        CommitOutcome::NothingToCommit
    );
    assert!(!t.repo.has_changes().unwrap());

    write(t.repo.root(), "new/file.txt", "hello\n");
    write(t.repo.root(), "README.md", "# changed\n");
    assert!(t.repo.has_changes().unwrap());
    let CommitOutcome::Committed { rev } = t.repo.commit_all("agent work").unwrap() else {
        panic!("expected a commit");
    };
    assert_eq!(rev, t.repo.head_rev().unwrap());
    let files = t.repo.changed_files(&format!("{rev}~1"), &rev).unwrap();
    let summary: Vec<(ChangeKind, PathBuf)> = files.into_iter().map(|f| (f.kind, f.path)).collect();
    assert_eq!(
        summary,
        [
            (ChangeKind::Modified, "README.md".into()),
            (ChangeKind::Added, "new/file.txt".into())
        ]
    );
    let info = t.repo.commit_info("HEAD").unwrap();
    assert_eq!(info.author, Identity::default());
    assert_eq!(
        info.committer,
        Identity {
            name: "agency".into(),
            email: "agency@localhost".into()
        }
    );
    assert_eq!(
        (info.id, info.subject, info.parents.len()),
        (rev, "agent work".to_owned(), 1)
    );
}

#[test]
fn two_worktrees_see_only_their_own_changes_and_their_merge_reports_the_conflict() {
    let t = TestRepo::new();
    let run = run_id("0123abcd");
    let (brief_a, brief_b) = (brief_id("0aaaaaaa"), brief_id("0bbbbbbb"));
    let branch_a = brief_branch_name(&run, "Auth API", &brief_a);
    let branch_b = brief_branch_name(&run, "billing", &brief_b);
    let wt_a = t
        .repo
        .add_worktree(&t.worktree_path("a"), &branch_a, "main")
        .unwrap();
    let wt_b = t
        .repo
        .add_worktree(&t.worktree_path("b"), &branch_b, "main")
        .unwrap();
    assert_eq!(wt_a.current_branch().unwrap(), Some(branch_a.clone()));

    write(wt_a.root(), "shared.txt", "one\nTWO (a)\nthree\n");
    write(wt_b.root(), "shared.txt", "one\ntwo (b)\nthree\n");
    // Uncommitted work is invisible across worktrees…
    assert_eq!(read(&wt_b, "shared.txt"), "one\ntwo (b)\nthree\n");
    committed(wt_a.commit_all("a's change").unwrap());
    committed(wt_b.commit_all("b's change").unwrap());
    // …and so is committed work on another branch.
    assert_eq!(read(&wt_a, "shared.txt"), "one\nTWO (a)\nthree\n");
    assert_eq!(read(&wt_b, "shared.txt"), "one\ntwo (b)\nthree\n");
    assert_eq!(read(&t.repo, "shared.txt"), "one\ntwo\nthree\n");

    let changes = t.repo.changed_files("main", &branch_a).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].kind, changes[0].path.clone()),
        (ChangeKind::Modified, "shared.txt".into())
    );
    assert!(t.repo.diff("main", &branch_a).unwrap().contains("+TWO (a)"));

    let integration = format!("agency/{}/integration", run.short());
    t.repo.create_branch(&integration, "main").unwrap();
    let merge_dir = t.worktree_path("merge");
    let first = t
        .repo
        .merge_into(&integration, &branch_a, &merge_dir, "merge a")
        .unwrap();
    let MergeOutcome::Merged { rev: after_a } = first else {
        panic!("{first:?}")
    };
    assert!(!merge_dir.exists(), "no merge worktree is left behind");
    assert_eq!(
        t.repo.rev_parse_all(&["main", &branch_a]).unwrap(),
        [
            t.repo.rev_parse("main").unwrap(),
            t.repo.rev_parse(&branch_a).unwrap()
        ]
    );
    assert!(t.repo.rev_parse_all(&["main", "no-such-branch"]).is_err());
    let merge = t.repo.commit_info(&integration).unwrap();
    assert_eq!(merge.id, after_a);
    assert_eq!(merge.subject, "merge a");
    assert_eq!(
        merge.parents,
        vec![
            t.repo.rev_parse("main").unwrap(),
            t.repo.rev_parse(&branch_a).unwrap()
        ],
        "a merge commit of the target and the merged branch, even where a fast-forward was possible"
    );
    assert_eq!(
        t.repo
            .file_at(&integration, "shared.txt".as_ref())
            .unwrap()
            .as_deref(),
        Some(&b"one\nTWO (a)\nthree\n"[..])
    );

    let second = t
        .repo
        .merge_into(&integration, &branch_b, &merge_dir, "merge b")
        .unwrap();
    assert_eq!(
        second,
        MergeOutcome::Conflict {
            files: vec!["shared.txt".into()]
        }
    );
    assert_eq!(
        t.repo.rev_parse(&integration).unwrap(),
        after_a,
        "the conflicting merge was aborted"
    );
    assert!(!merge_dir.exists());

    let again = t
        .repo
        .merge_into(&integration, &branch_a, &merge_dir, "merge a again")
        .unwrap();
    assert_eq!(again, MergeOutcome::AlreadyUpToDate);
}

#[test]
fn disjoint_changes_merge_cleanly() {
    let t = TestRepo::new();
    let wt_a = t
        .repo
        .add_worktree(&t.worktree_path("a"), "agency/feature-a", "main")
        .unwrap();
    let wt_b = t
        .repo
        .add_worktree(&t.worktree_path("b"), "agency/feature-b", "main")
        .unwrap();
    write(wt_a.root(), "shared.txt", "ONE\ntwo\nthree\n");
    write(wt_b.root(), "other.txt", "b\n");
    committed(wt_a.commit_all("a").unwrap());
    committed(wt_b.commit_all("b").unwrap());

    t.repo.create_branch("integration", "main").unwrap();
    let merger = t
        .repo
        .checkout_worktree(&t.worktree_path("merge"), "integration")
        .unwrap();
    assert!(matches!(
        merger.merge("agency/feature-a", "merge a").unwrap(),
        MergeOutcome::Merged { .. }
    ));
    assert!(matches!(
        merger.merge("agency/feature-b", "merge b").unwrap(),
        MergeOutcome::Merged { .. }
    ));
    assert_eq!(read(&merger, "shared.txt"), "ONE\ntwo\nthree\n");
    assert_eq!(read(&merger, "other.txt"), "b\n");
    assert_eq!(
        merger.commit_info("HEAD").unwrap().parents.len(),
        2,
        "a real merge commit"
    );
}

#[test]
fn a_merge_refused_for_another_reason_is_an_error_not_a_conflict() {
    let t = TestRepo::new();
    let err = t.repo.merge("no-such-branch", "m").unwrap_err();
    assert!(matches!(err, GitError::Failed { .. }), "{err}");
    let err = t
        .repo
        .merge_into("main", "main", &t.worktree_path("m"), "m")
        .unwrap_err();
    assert!(
        err.to_string().contains("already"),
        "the user's checkout is never borrowed: {err}"
    );
    let branch = "agency/checked-out";
    t.repo.create_branch("agency/other", "main").unwrap();
    let wt = t
        .repo
        .add_worktree(&t.worktree_path("co"), branch, "main")
        .unwrap();
    write(wt.root(), "x.txt", "x\n");
    committed(wt.commit_all("x").unwrap());
    let err = t
        .repo
        .merge_into(branch, "agency/other", &t.worktree_path("m2"), "m")
        .unwrap_err();
    assert!(
        err.to_string().contains("already"),
        "a branch checked out in a linked worktree is not moved under it: {err}"
    );
    let err = t.repo.merge("--abort", "m").unwrap_err();
    assert!(matches!(err, GitError::InvalidName { .. }), "{err}");
}

#[test]
fn the_head_of_a_large_diff_is_kept_and_the_rest_counted() {
    let t = TestRepo::new();
    let wt = t
        .repo
        .add_worktree(&t.worktree_path("big"), "agency/big", "main")
        .unwrap();
    for i in 0..200 {
        write(
            wt.root(),
            &format!("file-{i:03}.txt"),
            &format!("{}\n", "x".repeat(500)),
        );
    }
    committed(wt.commit_all("many files").unwrap());
    let whole = t.repo.diff("main", "agency/big").unwrap();
    assert!(whole.len() > 100_000, "{}", whole.len());

    let head = t.repo.diff_head("main", "agency/big", 4096).unwrap();
    assert_eq!(head.text, whole[..4096]);
    assert_eq!(head.total_bytes, whole.len() as u64);
    assert!(head.is_cut());

    let all = t.repo.diff_head("main", "agency/big", 1 << 20).unwrap();
    assert_eq!((all.text.as_str(), all.is_cut()), (whole.as_str(), false));
    let err = t.repo.diff_head("main", "no-such-branch", 10).unwrap_err();
    assert!(matches!(err, GitError::Failed { .. }), "{err}");
}

/// `t.repo` with git replaced by a script that writes each call's arguments to the returned log, then runs
/// the real git.
pub(crate) fn logging_git(t: &TestRepo) -> (Repo, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let log = t.dir.path().join("git-calls.log");
    let script = t.dir.path().join("logging-git");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec git \"$@\"\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let options = agency_exec::GitOptions {
        program: script.into(),
        ..t.repo.options().clone()
    };
    let repo = Repo::open(t.repo.root(), options).unwrap();
    git_calls(&log);
    (repo, log)
}

/// The git subcommands logged since the last call (the word after any `-c name=value`), and the log emptied.
pub(crate) fn git_calls(log: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    std::fs::write(log, "").unwrap();
    text.lines()
        .map(|line| {
            let mut words = line.split(' ');
            let mut word = words.next().unwrap_or_default();
            while word == "-c" {
                words.next();
                word = words.next().unwrap_or_default();
            }
            word.to_owned()
        })
        .collect()
}

#[test]
fn a_commit_is_an_add_and_a_commit_and_only_a_failed_one_asks_whether_anything_was_staged() {
    let t = TestRepo::new();
    let (repo, log) = logging_git(&t);
    write(repo.root(), "new.txt", "new\n");
    assert!(repo.stage_and_commit("work").unwrap());
    assert_eq!(git_calls(&log), ["add", "commit"]);
    assert_eq!(repo.changed_files("HEAD~1", "HEAD").unwrap().len(), 1);
    assert_eq!(repo.commit_info("HEAD").unwrap().subject, "work");
    git_calls(&log);

    assert!(!repo.stage_and_commit("again").unwrap());
    assert_eq!(git_calls(&log), ["add", "commit", "diff"]);
    write(repo.root(), "more.txt", "more\n");
    let outcome = repo.commit_all("more").unwrap();
    assert_eq!(
        outcome,
        CommitOutcome::Committed {
            rev: repo.head_rev().unwrap()
        }
    );
    assert_eq!(git_calls(&log), ["add", "commit", "rev-parse", "rev-parse"]);

    // A commit git refuses with something staged is an error, never "nothing to commit".
    let nameless = Repo::open(
        t.repo.root(),
        agency_exec::GitOptions {
            identity: Identity {
                name: String::new(),
                email: String::new(),
            },
            ..t.repo.options().clone()
        },
    )
    .unwrap();
    write(repo.root(), "refused.txt", "x\n");
    let err = nameless.stage_and_commit("refused").unwrap_err();
    assert!(
        matches!(&err, GitError::Failed { args, .. } if args.contains("commit")),
        "{err}"
    );
}

#[test]
fn full_branch_names_are_read_from_their_ref_files_and_everything_else_is_asked_of_git() {
    let t = TestRepo::new();
    let main = t.repo.head_rev().unwrap();
    t.repo.create_branch("agency/r/ws/work", "main").unwrap();
    write(t.repo.root(), "more.txt", "more\n");
    let second = committed(t.repo.commit_all("second").unwrap());
    // A tag of the same name: the short name means the tag to git, the full one the branch.
    t.repo.run_git(&["tag", "agency/r/ws/work", "HEAD"]).unwrap();
    let (repo, log) = logging_git(&t);

    let ids = repo
        .rev_parse_all(&["refs/heads/main", "refs/heads/agency/r/ws/work"])
        .unwrap();
    assert_eq!(ids, [second.clone(), main.clone()]);
    assert_eq!(git_calls(&log), Vec::<String>::new());
    let ids = repo
        .rev_parse_all(&["agency/r/ws/work", "refs/heads/agency/r/ws/work", "HEAD~1"])
        .unwrap();
    assert_eq!(ids, [second.clone(), main.clone(), main.clone()]);
    assert_eq!(git_calls(&log), ["rev-parse"]);

    // Moved by git, the file says where it is now.
    repo.run_git(&["update-ref", "refs/heads/agency/r/ws/work", &second])
        .unwrap();
    git_calls(&log);
    assert_eq!(
        repo.rev_parse_all(&["refs/heads/agency/r/ws/work"]).unwrap(),
        [second.as_str()]
    );
    assert_eq!(git_calls(&log), Vec::<String>::new());

    // Packed away (no loose file), its line in packed-refs is read; a branch that does not exist is asked
    // of git, whose error it is.
    repo.run_git(&["pack-refs", "--all"]).unwrap();
    git_calls(&log);
    assert!(!t.repo.common_dir().join("refs/heads/main").exists());
    assert_eq!(
        repo.rev_parse_all(&["refs/heads/main"]).unwrap(),
        [second.as_str()]
    );
    assert_eq!(git_calls(&log), Vec::<String>::new());
    let err = repo.rev_parse_all(&["refs/heads/no-such"]).unwrap_err();
    assert!(matches!(err, GitError::Failed { .. }), "{err}");
    assert_eq!(git_calls(&log), ["rev-parse"]);

    // A symbolic ref is not an id: git resolves it.
    repo.run_git(&["symbolic-ref", "refs/heads/alias", "refs/heads/agency/r/ws/work"])
        .unwrap();
    git_calls(&log);
    assert_eq!(repo.rev_parse_all(&["refs/heads/alias"]).unwrap(), [second]);
    assert_eq!(git_calls(&log), ["rev-parse"]);
}

#[test]
fn merges_one_after_another_into_a_branch_know_its_tree_and_notice_when_it_moved() {
    let t = TestRepo::new();
    let mut tips = Vec::new();
    for name in ["a", "b", "c"] {
        let wt = t
            .repo
            .add_worktree(&t.worktree_path(name), &format!("agency/{name}"), "main")
            .unwrap();
        write(wt.root(), &format!("{name}.txt"), "x\n");
        tips.push(committed(wt.commit_all(name).unwrap()));
    }
    t.repo.create_branch("work", "main").unwrap();
    let (repo, log) = logging_git(&t);
    let scratch = t.worktree_path("scratch");
    let merged = |from: &str| match repo.merge_into("work", from, &scratch, "merge").unwrap() {
        MergeOutcome::Merged { rev } => rev,
        other => panic!("{other:?}"),
    };
    let first = merged("agency/a");
    let calls: Vec<String> = git_calls(&log).into_iter().filter(|c| c != "version").collect();
    assert_eq!(calls, ["rev-parse", "merge-tree", "commit-tree", "update-ref"]);
    // The branch is where this merge left it: its tree is known.
    let second = merged("agency/b");
    assert_eq!(git_calls(&log), ["merge-tree", "commit-tree", "update-ref"]);
    let info = repo.commit_info(&second).unwrap();
    assert_eq!(info.parents, [first.clone(), tips[1].clone()]);
    assert!(repo.file_at("work", "a.txt".as_ref()).unwrap().is_some());
    assert!(repo.file_at("work", "b.txt".as_ref()).unwrap().is_some());
    git_calls(&log);
    assert_eq!(
        repo.merge_into("work", "agency/b", &scratch, "again").unwrap(),
        MergeOutcome::AlreadyUpToDate
    );
    assert_eq!(git_calls(&log), ["merge-tree", "merge-base"]);

    // Moved back to a merge this process made: still known. Moved anywhere else: asked of git again, and
    // merged on top of where it is now.
    repo.run_git(&["update-ref", "refs/heads/work", &first]).unwrap();
    git_calls(&log);
    merged("agency/c");
    assert_eq!(git_calls(&log), ["merge-tree", "commit-tree", "update-ref"]);
    let main = repo.rev_parse("main").unwrap();
    repo.run_git(&["update-ref", "refs/heads/work", &main]).unwrap();
    git_calls(&log);
    let fourth = merged("agency/c");
    assert_eq!(
        git_calls(&log),
        ["rev-parse", "merge-tree", "commit-tree", "update-ref"]
    );
    assert_eq!(
        repo.commit_info(&fourth).unwrap().parents,
        [main, tips[2].clone()]
    );
    assert!(repo.file_at("work", "a.txt".as_ref()).unwrap().is_none());
    assert!(repo.file_at("work", "c.txt".as_ref()).unwrap().is_some());
}

/// A chain makes a merge commit per branch but moves the branch once; a conflict in the middle changes
/// nothing, and someone else moving the branch meanwhile makes the settle fail, not overwrite.
#[test]
fn a_merge_chain_makes_a_commit_per_branch_and_moves_the_branch_once() {
    let t = TestRepo::new();
    write(t.repo.root(), "shared.txt", "base\n");
    committed(t.repo.commit_all("shared").unwrap());
    let mut tips = Vec::new();
    for (name, file) in [
        ("a", "a.txt"),
        ("b", "shared.txt"),
        ("c", "c.txt"),
        ("d", "shared.txt"),
    ] {
        let wt = t
            .repo
            .add_worktree(&t.worktree_path(name), &format!("agency/{name}"), "main")
            .unwrap();
        write(wt.root(), file, &format!("{name}\n"));
        tips.push(committed(wt.commit_all(name).unwrap()));
    }
    t.repo.create_branch("work", "main").unwrap();
    let start = t.repo.rev_parse("work").unwrap();
    let (repo, log) = logging_git(&t);
    let mut chain = repo.merge_chain("work", &t.worktree_path("scratch")).unwrap();
    let merged = |outcome: MergeOutcome| match outcome {
        MergeOutcome::Merged { rev } => rev,
        other => panic!("{other:?}"),
    };
    let first = merged(chain.merge("agency/a", "merge a").unwrap());
    let second = merged(chain.merge("agency/b", "merge b").unwrap());
    // d changes the line b changed: a conflict, and the chain goes on from b's merge.
    match chain.merge("agency/d", "merge d").unwrap() {
        MergeOutcome::Conflict { files } => assert_eq!(files, [PathBuf::from("shared.txt")]),
        other => panic!("{other:?}"),
    }
    let third = merged(chain.merge("agency/c", "merge c").unwrap());
    assert_eq!(
        repo.rev_parse("work").unwrap(),
        start,
        "not moved before the settle"
    );
    chain.settle().unwrap();
    let calls: Vec<String> = git_calls(&log)
        .into_iter()
        .filter(|c| !["version", "rev-parse"].contains(&c.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            "merge-tree",
            "commit-tree",
            "merge-tree",
            "commit-tree",
            "merge-tree",
            "merge-tree",
            "commit-tree",
            "update-ref"
        ]
    );
    assert_eq!(repo.rev_parse("work").unwrap(), third);
    assert_eq!(
        repo.commit_info(&first).unwrap().parents,
        [start.clone(), tips[0].clone()]
    );
    assert_eq!(
        repo.commit_info(&second).unwrap().parents,
        [first, tips[1].clone()]
    );
    assert_eq!(
        repo.commit_info(&third).unwrap().parents,
        [second, tips[2].clone()]
    );
    assert_eq!(
        repo.file_at("work", "shared.txt".as_ref()).unwrap().unwrap(),
        b"b\n"
    );
    let reflog = repo.run_git(&["reflog", "-1", "--format=%gs", "work"]).unwrap();
    assert_eq!(
        reflog.stdout.text().trim(),
        "merge 3 branches: agency/a, agency/b, agency/c"
    );

    // Settled again with nothing new: nothing to do. Moved by someone else: the settle refuses.
    git_calls(&log);
    chain.settle().unwrap();
    assert!(git_calls(&log).is_empty());
    let wt = t
        .repo
        .add_worktree(&t.worktree_path("e"), "agency/e", "main")
        .unwrap();
    write(wt.root(), "e.txt", "e\n");
    committed(wt.commit_all("e").unwrap());
    merged(chain.merge("agency/e", "merge e").unwrap());
    repo.run_git(&["update-ref", "refs/heads/work", &start]).unwrap();
    assert!(chain.settle().is_err(), "the branch moved under the chain");
    assert_eq!(repo.rev_parse("work").unwrap(), start);
}

#[test]
fn one_diff_gives_the_changed_paths_and_the_patch() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let t = TestRepo::new();
    let root = t.repo.root();
    write(root, "old name.txt", "a\nb\nc\nd\ne\nf\n");
    write(root, "gone.txt", "gone\n");
    write(root, "run.sh", "echo\n");
    std::fs::write(root.join("bin"), b"\x00\x01bin").unwrap();
    let base = committed(t.repo.commit_all("base").unwrap());
    std::fs::rename(root.join("old name.txt"), root.join("new name.txt")).unwrap();
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("bin"), b"\x00\x02bin").unwrap();
    std::fs::write(root.join(std::ffi::OsStr::from_bytes(b"we\xffird\ttab")), "q\n").unwrap();
    write(root, "quo\"te", "z\n");
    write(root, "shared.txt", "one\n");
    // A patch larger than a pipe holds: git must be read to its end to finish.
    write(root, "big.txt", &"x\n".repeat(50_000));
    let commit = committed(t.repo.commit_all("changes").unwrap());

    let (repo, log) = logging_git(&t);
    let diff = repo.diff_with_changes(&base, &commit, usize::MAX).unwrap();
    assert_eq!(git_calls(&log), ["diff"]);
    let mut changes = diff.changes.clone();
    let mut listed = t.repo.changed_files(&base, &commit).unwrap();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    listed.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(changes, listed);
    assert_eq!(changes.len(), 8, "{changes:?}");
    assert!(changes.iter().any(|c| c.kind == ChangeKind::Renamed
        && c.old_path == Some("old name.txt".into())
        && c.path == std::path::Path::new("new name.txt")));
    let whole = t.repo.diff(&base, &commit).unwrap();
    assert_eq!(String::from_utf8_lossy(&diff.patch), whole);
    assert_eq!(
        (diff.total_bytes, diff.is_cut()),
        (diff.patch.len() as u64, false)
    );

    let cut = repo.diff_with_changes(&base, &commit, 100).unwrap();
    assert_eq!(cut.changes, diff.changes);
    assert_eq!(cut.patch, diff.patch[..100]);
    assert_eq!((cut.total_bytes, cut.is_cut()), (diff.total_bytes, true));
    assert_eq!(cut.head(), t.repo.diff_head(&base, &commit, 100).unwrap());

    // More changed paths than the output cap allows: an error, at once (git is read to its end).
    let capped = Repo::open(
        t.repo.root(),
        agency_exec::GitOptions {
            output_cap: 200,
            timeout: std::time::Duration::from_secs(20),
            ..t.repo.options().clone()
        },
    )
    .unwrap();
    for max in [100, usize::MAX] {
        let started = std::time::Instant::now();
        let err = capped.diff_with_changes(&base, &commit, max).unwrap_err();
        assert!(matches!(err, GitError::OutputTooLarge { cap: 200, .. }), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    let same = repo.diff_with_changes(&commit, &commit, 100).unwrap();
    assert_eq!((same.changes.len(), same.total_bytes), (0, 0));
    let err = repo.diff_with_changes(&base, "no-such-branch", 100).unwrap_err();
    assert!(matches!(err, GitError::Failed { .. }), "{err}");
}

#[test]
fn worktrees_are_listed_and_removed() {
    let t = TestRepo::new();
    let path = t.worktree_path("a");
    let wt = t.repo.add_worktree(&path, "agency/a", "main").unwrap();
    write(wt.root(), "dirty.txt", "uncommitted\n");

    let list = t.repo.list_worktrees().unwrap();
    assert_eq!(list.len(), 2);
    assert!(list[0].is_main && list[0].branch.as_deref() == Some("main"));
    assert_eq!(list[1].path.canonicalize().unwrap(), path.canonicalize().unwrap());
    assert_eq!(list[1].branch.as_deref(), Some("agency/a"));

    // Opened without git, it is what git itself says it is.
    let asked = t.repo.open_other(&path).unwrap();
    let known = t.repo.open_linked(&path).unwrap();
    assert_eq!(
        (known.root(), known.common_dir().canonicalize().unwrap()),
        (asked.root(), asked.common_dir().canonicalize().unwrap())
    );
    assert_eq!(wt.root(), asked.root());
    // A directory that is no worktree of this repository is left to git, which refuses it.
    let stranger = tempfile::tempdir().unwrap();
    std::fs::write(
        stranger.path().join(".git"),
        "gitdir: /elsewhere/.git/worktrees/x\n",
    )
    .unwrap();
    let err = t.repo.open_linked(stranger.path()).unwrap_err();
    assert!(matches!(err, GitError::NotAWorkTree { .. }), "{err}");

    let err = t.repo.remove_worktree(&path, false).unwrap_err();
    assert!(err.to_string().contains("untracked"), "{err}");
    t.repo.remove_worktree(&path, true).unwrap();
    assert!(!path.exists());
    assert_eq!(t.repo.list_worktrees().unwrap().len(), 1);

    // A worktree directory deleted by hand is pruned.
    let path = t.worktree_path("b");
    t.repo.add_worktree(&path, "agency/b", "main").unwrap();
    std::fs::remove_dir_all(&path).unwrap();
    t.repo.remove_worktree(&path, false).unwrap();
    assert_eq!(t.repo.list_worktrees().unwrap().len(), 1);

    assert!(t.repo.branch_exists("agency/a").unwrap());
    t.repo.delete_branch("agency/a", true).unwrap();
    assert!(!t.repo.branch_exists("agency/a").unwrap());
    assert_eq!(t.repo.list_branches("agency/").unwrap(), ["agency/b"]);
}

#[test]
fn gc_collects_only_finished_runs_and_never_the_main_work_tree() {
    let t = TestRepo::new();
    let (finished, running) = (run_id("0aaaaaaa"), run_id("0bbbbbbb"));
    let done_branch = brief_branch_name(&finished, "ws", &brief_id("1aaaaaaa"));
    let done_no_worktree = brief_branch_name(&finished, "ws", &brief_id("1bbbbbbb"));
    let live_branch = brief_branch_name(&running, "ws", &brief_id("1ccccccc"));
    // Named by the brief's short id, as builds before 2026-11-25 did.
    let done_short_named = format!("agency/{}/ws/1ddddddd", finished.short());
    let done_path = t.worktree_path("done");
    t.repo.add_worktree(&done_path, &done_branch, "main").unwrap();
    t.repo.create_branch(&done_no_worktree, "main").unwrap();
    t.repo.create_branch(&done_short_named, "main").unwrap();
    t.repo
        .add_worktree(&t.worktree_path("live"), &live_branch, "main")
        .unwrap();
    t.repo.create_branch("agency/not-a-brief-branch", "main").unwrap();

    let finished8 = finished.short();
    let leftovers = finished_run_leftovers(&t.repo, |run8| run8 == finished8).unwrap();
    let mut branches: Vec<&str> = leftovers.iter().map(|l| l.branch.as_str()).collect();
    branches.sort_unstable();
    let mut expected = [
        done_branch.as_str(),
        done_no_worktree.as_str(),
        done_short_named.as_str(),
    ];
    expected.sort_unstable();
    assert_eq!(branches, expected);

    let report = remove_leftovers(&t.repo, &leftovers);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.removed_worktrees.len(), 1);
    assert_eq!(report.deleted_branches.len(), 3);
    assert!(!done_path.exists());
    assert_eq!(t.repo.list_branches("agency/").unwrap(), {
        let mut left = vec!["agency/not-a-brief-branch".to_owned(), live_branch.clone()];
        left.sort();
        left
    });
    assert_eq!(t.repo.list_worktrees().unwrap().len(), 2);
}

#[test]
fn branches_under_a_directory_are_found_by_whole_components() {
    let t = TestRepo::new();
    assert!(!t.repo.has_branches_under("agency/0123abcd").unwrap());
    t.repo
        .create_branch("agency/0123abcde/integration", "main")
        .unwrap();
    assert!(
        !t.repo.has_branches_under("agency/0123abcd").unwrap(),
        "a longer component is another directory"
    );
    t.repo.create_branch("agency/0123abcd/ws/work", "main").unwrap();
    assert!(t.repo.has_branches_under("agency/0123abcd").unwrap());
    assert!(t.repo.has_branches_under("agency/0123abcd/").unwrap());
    assert!(matches!(
        t.repo.has_branches_under("--all"),
        Err(GitError::InvalidName { .. })
    ));
}

#[test]
fn files_at_revisions_and_detached_checkouts() {
    let t = TestRepo::new();
    let first = t.repo.head_rev().unwrap();
    write(t.repo.root(), "README.md", "# second\n");
    committed(t.repo.commit_all("second").unwrap());

    assert_eq!(
        t.repo.file_at(&first, "README.md".as_ref()).unwrap().unwrap(),
        b"# demo\n"
    );
    assert_eq!(
        t.repo.file_at("HEAD", "README.md".as_ref()).unwrap().unwrap(),
        b"# second\n"
    );
    assert_eq!(t.repo.file_at("HEAD", "missing.txt".as_ref()).unwrap(), None);

    let path = t.worktree_path("review");
    let review = t.repo.add_detached_worktree(&path, &first).unwrap();
    assert_eq!(review.current_branch().unwrap(), None);
    assert_eq!(review.head_rev().unwrap(), first);
    assert_eq!(read(&review, "README.md"), "# demo\n");
    t.repo.remove_worktree(&path, false).unwrap();

    // Any other git call gets the same fixed environment.
    let output = t.repo.run_git(&["config", "user.name"]);
    assert!(
        output.is_err(),
        "no user.name leaks in from the machine: {output:?}"
    );
    let output = t.repo.run_git(&["var", "GIT_AUTHOR_IDENT"]).unwrap();
    assert!(output.stdout.text().starts_with("agency <agency@localhost>"));
}

#[test]
fn modify_delete_and_add_add_conflicts_are_reported_too() {
    let t = TestRepo::new();
    let wt_a = t
        .repo
        .add_worktree(&t.worktree_path("a"), "agency/a", "main")
        .unwrap();
    let wt_b = t
        .repo
        .add_worktree(&t.worktree_path("b"), "agency/b", "main")
        .unwrap();
    write(wt_a.root(), "shared.txt", "changed by a\n");
    write(wt_a.root(), "both-new.txt", "a\n");
    std::fs::remove_file(wt_b.root().join("shared.txt")).unwrap();
    write(wt_b.root(), "both-new.txt", "b\n");
    committed(wt_a.commit_all("a").unwrap());
    committed(wt_b.commit_all("b").unwrap());

    let outcome = wt_a.merge("agency/b", "merge b into a").unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::Conflict {
            files: vec!["both-new.txt".into(), "shared.txt".into()]
        }
    );
    assert!(
        !wt_a.has_changes().unwrap(),
        "the aborted merge leaves the work tree clean"
    );
}

#[test]
fn a_dirty_target_refuses_the_merge_as_an_error() {
    let t = TestRepo::new();
    let wt = t
        .repo
        .add_worktree(&t.worktree_path("a"), "agency/a", "main")
        .unwrap();
    write(wt.root(), "shared.txt", "committed on a\n");
    committed(wt.commit_all("a").unwrap());
    write(t.repo.root(), "shared.txt", "uncommitted in main\n");
    let err = t.repo.merge("agency/a", "merge").unwrap_err();
    assert!(err.to_string().contains("would be overwritten"), "{err}");
    assert_eq!(read(&t.repo, "shared.txt"), "uncommitted in main\n");
}

#[test]
fn worktree_changes_wait_for_another_process_holding_the_repository_lock() {
    let t = TestRepo::new();
    let linked = t.dir.path().join("linked");
    assert_eq!(
        t.repo.common_dir().canonicalize().unwrap(),
        t.repo.root().join(".git").canonicalize().unwrap()
    );
    // Another agency process (a worker on the same repository) is changing worktrees: it holds the lock.
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(t.repo.common_dir().join(agency_exec::git::worktree::LOCK_FILE))
        .unwrap();
    held.lock().unwrap();
    let repo = t.repo.clone();
    let target = linked.clone();
    let adding =
        std::thread::spawn(move || repo.add_worktree(&target, "agency/lock/test", "HEAD").map(|_| ()));
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(!linked.exists(), "the add must wait for the other process's turn");
    drop(held);
    adding.join().unwrap().unwrap();
    assert!(linked.join("README.md").exists());
    // A linked worktree shares the repository's lock.
    let inside = t.repo.open_other(&linked).unwrap();
    assert_eq!(
        inside.common_dir().canonicalize().unwrap(),
        t.repo.common_dir().canonicalize().unwrap()
    );
}

#[test]
fn a_reftable_repository_merges_in_a_worktree_and_its_checked_out_branch_is_refused() {
    // With the reftable backend a worktree's HEAD file is a placeholder, so the merge cannot tell from it
    // which branches are checked out: it leaves that to git, in a worktree.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let init = std::process::Command::new("git")
        .args([
            "init",
            "--quiet",
            "--ref-format=reftable",
            "--initial-branch=main",
        ])
        .arg(&root)
        .output()
        .unwrap();
    if !init.status.success() {
        eprintln!("skipped: this git has no reftable backend (2.45+): {init:?}");
        return;
    }
    let repo = agency_exec::Repo::open(&root, agency_exec::GitOptions::default()).unwrap();
    write(&root, "shared.txt", "one\n");
    committed(repo.commit_all("base").unwrap());
    let wt = repo
        .add_worktree(&dir.path().join("a"), "agency/a", "main")
        .unwrap();
    write(wt.root(), "shared.txt", "ONE\n");
    let a = committed(wt.commit_all("a").unwrap());
    repo.create_branch("integration", "main").unwrap();
    // No loose ref files here: branches are resolved by git.
    assert_eq!(repo.rev_parse_all(&["refs/heads/agency/a"]).unwrap(), [a]);

    let merged = repo
        .merge_into("integration", "agency/a", &dir.path().join("m1"), "merge a")
        .unwrap();
    assert!(matches!(merged, MergeOutcome::Merged { .. }), "{merged:?}");
    assert_eq!(
        repo.file_at("integration", "shared.txt".as_ref())
            .unwrap()
            .as_deref(),
        Some(&b"ONE\n"[..])
    );
    let err = repo
        .merge_into("main", "agency/a", &dir.path().join("m2"), "m")
        .unwrap_err();
    assert!(err.to_string().contains("already"), "{err}");
    assert_eq!(
        read(&repo, "shared.txt"),
        "one\n",
        "the user's checkout is untouched"
    );
}

/// A repository whose own config asks for maintenance after every commit, in the foreground (a
/// commit-graph written each time): a commit made by agency starts none (in a runner its `gc` would race
/// the removal of finished worktrees), and the user's own git still does.
#[test]
fn commits_by_agency_start_no_background_maintenance() {
    let t = TestRepo::new();
    for (key, value) in [
        ("maintenance.commit-graph.enabled", "true"),
        ("maintenance.commit-graph.auto", "-1"),
        ("maintenance.autoDetach", "false"),
    ] {
        let status = std::process::Command::new("git")
            .args(["config", key, value])
            .current_dir(t.repo.root())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let info = t.repo.root().join(".git/objects/info");
    let graph_written = || info.join("commit-graph").exists() || info.join("commit-graphs").exists();
    write(t.repo.root(), "more.txt", "more\n");
    committed(t.repo.commit_all("by agency").unwrap());
    assert!(!graph_written(), "agency's commit started maintenance");

    // The same commit by plain git, with the repository's config as it is, does.
    write(t.repo.root(), "more.txt", "even more\n");
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@example.com",
            "commit",
            "-qam",
            "by hand",
        ])
        .current_dir(t.repo.root())
        .env("HOME", t.dir.path().join("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        graph_written(),
        "plain git ran no maintenance: the check above proves nothing"
    );
}

#[test]
fn a_worktree_made_ahead_is_moved_to_a_brief_without_git_and_git_agrees() {
    let t = TestRepo::new();
    let head = t.repo.head_rev().unwrap();
    assert_eq!(
        t.repo.branch_commit_on_disk("main").as_deref(),
        Some(head.as_str())
    );
    assert_eq!(t.repo.branch_commit_on_disk("no-such-branch"), None);
    let spare = t.worktree_path("spare");
    t.repo.add_detached_worktree(&spare, &head).unwrap();
    let dest = t.worktree_path("brief");

    // Refused, with nothing changed: another commit, a path elsewhere, a destination that exists.
    let other = "0".repeat(40);
    assert!(!t.repo.adopt_worktree(&spare, &dest, &other).unwrap());
    let elsewhere = tempfile::tempdir().unwrap();
    assert!(
        !t.repo
            .adopt_worktree(&spare, &elsewhere.path().join("x"), &head)
            .unwrap()
    );
    std::fs::create_dir_all(&dest).unwrap();
    assert!(!t.repo.adopt_worktree(&spare, &dest, &head).unwrap());
    std::fs::remove_dir(&dest).unwrap();

    assert!(t.repo.adopt_worktree(&spare, &dest, &head).unwrap());
    assert!(!spare.exists());
    // git finds it at its new path, detached at the commit, and forgets nothing on a prune.
    t.repo.prune_worktrees().unwrap();
    let listed = t.repo.list_worktrees().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(
        listed[1].path.canonicalize().unwrap(),
        dest.canonicalize().unwrap()
    );
    assert_eq!(listed[1].head.as_deref(), Some(head.as_str()));
    let moved = t.repo.open_linked(&dest).unwrap();
    moved
        .run_git(&["checkout", "--quiet", "-b", "agency/moved"])
        .unwrap();
    assert_eq!(moved.current_branch().unwrap().as_deref(), Some("agency/moved"));
    assert!(
        moved
            .run_git(&["status", "--porcelain"])
            .unwrap()
            .stdout
            .text()
            .is_empty()
    );
    // And it is removed like any other.
    t.repo.remove_worktree(&dest, true).unwrap();
    assert_eq!(t.repo.list_worktrees().unwrap().len(), 1);
}
