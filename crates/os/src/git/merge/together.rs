//! Many branches merged into a chain's branch at once, with one merge commit for all of them
//! ([`MergeChain::merge_together`]).
//!
//! A chain's merge of one branch costs two git processes (`merge-tree`, `commit-tree`), a squad of fifty
//! slices a hundred. Merging `n` branches whose own commits (those not on the target branch) do not meet
//! takes instead one `rev-list` (their own commits, to see that no two share one), one `merge-tree --stdin`
//! that merges each branch onto the target (git finding each one's merge base), about log₂ n more that
//! combine those results two by two, and one `commit-tree`: a single merge commit whose parents are the
//! target and every branch, as `git merge a b c` makes.
//!
//! Why combining is right: each first result is the target's tree plus exactly one branch's changes, so any
//! two of them merge over the target as their common base and hold both branches' changes. The result is
//! the chain's: when no two branches share a commit of their own, what a chain's earlier merges brought in
//! is not in any later branch's history, so each branch's merge base with the chain is its merge base with
//! the target. When two do share one (a pipeline task that forked from its predecessor's branch), the
//! shared changes would meet as two changes of the same lines, and a branch that undid one of them would be
//! undone in turn; those branches are left to the chain, which also says which branch conflicts.

use std::collections::HashMap;

use super::{ChainTip, GitError, MergeChain, MergeOutcome, check_name, remember_tree};

/// Fewer branches than this merge one by one: with two, the chain's four processes are no more.
const AT_LEAST: usize = 3;

/// The `merge-tree --write-tree` options of every merge here: no messages, conflicted paths by name.
const MERGE_TREE: [&str; 5] = [
    "merge-tree",
    "--write-tree",
    "--stdin",
    "--name-only",
    "--no-messages",
];

impl MergeChain<'_> {
    /// Merges every branch of `from` on top of the chain with one merge commit for all of them, its subject
    /// `merge <n> branches into <branch>` and its body each merged branch's line from `describe` (by its
    /// place in `from`). A branch already in the chain is [`MergeOutcome::AlreadyUpToDate`]. `None`, with
    /// nothing changed, when they cannot be merged that way (fewer than three, two sharing a commit of their
    /// own, a conflict, git before 2.45, a chain that merges in a worktree): merge them one by one with
    /// [`MergeChain::merge`].
    pub fn merge_together(
        &mut self,
        from: &[&str],
        describe: impl Fn(usize) -> String,
    ) -> Result<Option<Vec<MergeOutcome>>, GitError> {
        for name in from {
            check_name("branch", name)?;
        }
        let Some(tip) = &mut self.tip else {
            return Ok(None);
        };
        let repo = self.repo;
        if from.len() < AT_LEAST || !repo.merges_trees()? {
            return Ok(None);
        }
        let refs: Vec<String> = from.iter().map(|name| format!("refs/heads/{name}")).collect();
        let revs = repo.rev_parse_all(&refs.iter().map(String::as_str).collect::<Vec<_>>())?;
        let Some(has_own) = own_commits(repo, &tip.rev, &revs)? else {
            return Ok(None);
        };
        let pending: Vec<usize> = (0..from.len()).filter(|&i| has_own[i]).collect();
        if pending.is_empty() {
            return Ok(Some(vec![MergeOutcome::AlreadyUpToDate; from.len()]));
        }
        if pending.len() < AT_LEAST {
            return Ok(None);
        }
        // Each branch onto the target, then the results two by two over the target.
        let onto: String = pending
            .iter()
            .map(|&i| format!("{} {}\n", tip.rev, revs[i]))
            .collect();
        let Some(mut level) = merge_lines(repo, onto, pending.len())? else {
            return Ok(None);
        };
        while level.len() > 1 {
            let pairs: String = level
                .chunks_exact(2)
                .map(|pair| format!("{} -- {} {}\n", tip.rev, pair[0], pair[1]))
                .collect();
            let Some(mut next) = merge_lines(repo, pairs, level.len() / 2)? else {
                return Ok(None);
            };
            if level.len() % 2 == 1 {
                next.extend(level.pop());
            }
            level = next;
        }
        // Three or more merged down to one.
        let Some(tree) = level.pop() else {
            return Ok(None);
        };
        let message = format!("merge {} branches into {}", pending.len(), self.into);
        let commit = commit_together(repo, tip, &tree, &pending, &revs, &message, &describe)?;
        remember_tree(&commit, &tree);
        tip.rev.clone_from(&commit);
        tip.tree = tree;
        tip.merged.extend(pending.iter().map(|&i| from[i].to_owned()));
        Ok(Some(
            (0..from.len())
                .map(|i| {
                    if has_own[i] {
                        MergeOutcome::Merged { rev: commit.clone() }
                    } else {
                        MergeOutcome::AlreadyUpToDate
                    }
                })
                .collect(),
        ))
    }
}

/// For each of `revs`, whether it has commits of its own (not in `target`'s history); `None` when two of
/// them share one, or there are too many to list (a branch with a long history of its own).
fn own_commits(repo: &super::Repo, target: &str, revs: &[String]) -> Result<Option<Vec<bool>>, GitError> {
    let mut args: Vec<&str> = vec!["rev-list", "--parents"];
    args.extend(revs.iter().map(String::as_str));
    let not_target = format!("^{target}");
    args.push(&not_target);
    args.push("--");
    let text = match repo.git_text(&args) {
        Ok(text) => text,
        Err(GitError::OutputTooLarge { .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    // Each line is a commit of their own and its parents, of which only those also listed are their own.
    let parents: HashMap<&str, Vec<&str>> = text
        .lines()
        .filter_map(|line| {
            let mut ids = line.split(' ');
            Some((ids.next()?, ids.collect()))
        })
        .collect();
    let mut owner: HashMap<&str, usize> = HashMap::with_capacity(parents.len());
    let mut has_own = vec![false; revs.len()];
    for (i, rev) in revs.iter().enumerate() {
        let mut stack = vec![rev.as_str()];
        while let Some(commit) = stack.pop() {
            let Some(commit_parents) = parents.get(commit) else {
                continue;
            };
            match owner.get(commit) {
                Some(&other) if other == i => continue,
                Some(_) => return Ok(None),
                None => {}
            }
            owner.insert(commit, i);
            has_own[i] = true;
            stack.extend(commit_parents.iter().copied());
        }
    }
    Ok(Some(has_own))
}

/// The trees of the `count` merges `lines` asks `merge-tree --stdin` for, in order; `None` when any of them
/// conflicts.
fn merge_lines(repo: &super::Repo, lines: String, count: usize) -> Result<Option<Vec<String>>, GitError> {
    let text = repo.git_text_with_input(&MERGE_TREE, lines.into_bytes())?;
    // Per merge: whether it was clean, the tree, the conflicted paths, then an empty entry.
    let mut entries = text.split('\0');
    let mut trees = Vec::with_capacity(count);
    for _ in 0..count {
        let (Some(clean), Some(tree)) = (entries.next(), entries.next()) else {
            return Err(GitError::UnexpectedOutput {
                args: MERGE_TREE.join(" "),
                detail: format!("expected {count} merges, got {}", trees.len()),
            });
        };
        if clean != "1" {
            return Ok(None);
        }
        if entries.next() != Some("") {
            return Err(GitError::UnexpectedOutput {
                args: MERGE_TREE.join(" "),
                detail: format!("a clean merge listed conflicted paths: {text:?}"),
            });
        }
        trees.push(tree.to_owned());
    }
    Ok(Some(trees))
}

/// The merge commit of `tree` whose parents are the chain's tip and the branches at `pending`.
fn commit_together(
    repo: &super::Repo,
    tip: &ChainTip,
    tree: &str,
    pending: &[usize],
    revs: &[String],
    message: &str,
    describe: &impl Fn(usize) -> String,
) -> Result<String, GitError> {
    let mut text = format!("{message}\n");
    for &i in pending {
        text.push('\n');
        text.push_str(&describe(i));
    }
    let mut args: Vec<&str> = vec!["commit-tree", "--no-gpg-sign", "-p", &tip.rev];
    for &i in pending {
        args.extend(["-p", revs[i].as_str()]);
    }
    args.extend(["-m", &text, tree]);
    Ok(repo.git_text(&args)?.trim().to_owned())
}
