//! The clean checkout a sign-off works in: a temporary `git worktree add --detach` of the commit under
//! review, removed again when dropped. Verify runs there, evidence is read there and the judge inspects it
//! there, so nothing the agent left uncommitted in its own tree can count.
//!
//! Also the few git reads [`agency_exec::Repo`] does not offer (a file's content at a revision, the commit
//! that introduced a goal), run the same way: argv, no shell, a fixed environment, a timeout.

use std::path::{Path, PathBuf};

use agency_exec::{CommandSpec, GitError, Output, Repo, run};

use crate::SignoffError;

/// A detached worktree of one commit in a temporary directory; removed (and pruned) on drop.
#[derive(Debug)]
pub struct CleanCheckout {
    repo: Repo,
    path: PathBuf,
    commit: String,
    // Held for its Drop: the directory the worktree lives in.
    _dir: tempfile::TempDir,
}

impl CleanCheckout {
    /// Checks out `commit` of `repo` in a fresh temporary worktree.
    pub fn create(repo: &Repo, commit: &str) -> Result<Self, SignoffError> {
        let commit = repo.rev_parse(commit).map_err(|e| SignoffError::Git {
            what: format!("resolving the commit under review `{commit}`"),
            source: e,
        })?;
        Self::of_commit(repo, commit)
    }

    /// Checks out `commit`, a full commit id already resolved, in a fresh temporary worktree.
    pub fn of_commit(repo: &Repo, commit: String) -> Result<Self, SignoffError> {
        if commit.is_empty() {
            return Err(SignoffError::Input("an empty commit id names no commit".into()));
        }
        let dir = tempfile::Builder::new()
            .prefix("agency-signoff-")
            .tempdir()
            .map_err(|e| SignoffError::Io {
                what: "creating the temporary checkout directory".into(),
                source: e,
            })?;
        // git names the worktree's admin directory after the last path component: a name unique to this
        // checkout (the temporary directory's own), so that sign-offs running at once never race for one.
        let name = dir
            .path()
            .file_name()
            .map_or_else(|| "checkout".into(), |n| n.to_string_lossy().into_owned());
        let path = dir.path().join(name);
        repo.add_detached_worktree(&path, &commit)
            .map_err(|e| SignoffError::Git {
                what: format!("checking out {commit} for the sign-off"),
                source: e,
            })?;
        Ok(CleanCheckout {
            repo: repo.clone(),
            path,
            commit,
            _dir: dir,
        })
    }

    /// The checkout's top-level directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The full id of the commit checked out.
    pub fn commit(&self) -> &str {
        &self.commit
    }
}

impl Drop for CleanCheckout {
    fn drop(&mut self) {
        // Best effort: a failure leaves a prunable worktree record, which `git worktree prune` clears.
        let _ = self.repo.remove_worktree(&self.path, true);
    }
}

/// The content of `path` at `rev`, `None` when the file does not exist there.
pub fn file_at(repo: &Repo, rev: &str, path: &str) -> Result<Option<String>, SignoffError> {
    let spec = format!("{rev}:{path}");
    let output = git_output(repo, &["cat-file".as_ref(), "blob".as_ref(), spec.as_ref()])?;
    if !output.success() {
        return Ok(None);
    }
    Ok(Some(output.stdout.text().into_owned()))
}

/// Whether `path` (a file or a directory) exists at `rev`.
pub fn exists_at(repo: &Repo, rev: &str, path: &str) -> Result<bool, SignoffError> {
    let spec = format!("{rev}:{path}");
    Ok(git_output(repo, &["cat-file".as_ref(), "-e".as_ref(), spec.as_ref()])?.success())
}

/// The commit that first added `needle` to `file` (oldest first), if any did.
pub fn commit_adding(repo: &Repo, file: &str, needle: &str) -> Result<Option<String>, SignoffError> {
    let pickaxe = format!("-S{needle}");
    let output = git(
        repo,
        &[
            "log".as_ref(),
            "--format=%H".as_ref(),
            "--reverse".as_ref(),
            pickaxe.as_ref(),
            "--".as_ref(),
            file.as_ref(),
        ],
    )?;
    Ok(output.stdout.text().lines().next().map(str::to_owned))
}

/// The first parent of `commit`, `None` for a root commit.
pub fn parent_of(repo: &Repo, commit: &str) -> Result<Option<String>, SignoffError> {
    let spec = format!("{commit}^");
    let output = git_output(
        repo,
        &[
            "rev-parse".as_ref(),
            "--verify".as_ref(),
            "--quiet".as_ref(),
            spec.as_ref(),
        ],
    )?;
    Ok(output.success().then(|| output.stdout.text().trim().to_owned()))
}

fn git(repo: &Repo, args: &[&std::ffi::OsStr]) -> Result<Output, SignoffError> {
    let output = git_output(repo, args)?;
    if !output.success() {
        return Err(SignoffError::Git {
            what: format!("running git {}", join(args)),
            source: GitError::Failed {
                args: join(args),
                status: output.describe(),
                stderr: output.stderr.text().trim().to_owned(),
            },
        });
    }
    Ok(output)
}

fn git_output(repo: &Repo, args: &[&std::ffi::OsStr]) -> Result<Output, SignoffError> {
    let options = repo.options();
    let mut spec = CommandSpec::new(&options.program)
        .args(args.iter().map(|a| a.to_os_string()))
        .cwd(repo.root())
        .timeout(options.timeout)
        .output_cap(options.output_cap)
        .inherit_env("PATH")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    spec = match &options.home {
        Some(home) => spec.env("HOME", home),
        None => spec.inherit_env("HOME"),
    };
    run(&spec).map_err(|e| SignoffError::Git {
        what: format!("running git {}", join(args)),
        source: GitError::Process(e),
    })
}

fn join(args: &[&std::ffi::OsStr]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}
