//! git through the git CLI: the repository, its branches, commits on an agent's behalf and diffs.
//!
//! Every call runs `git` through [`crate::process`] (argv, no shell, a timeout) with a fixed environment:
//! the parent's is dropped except `PATH` (and `HOME` unless one is configured), system config is ignored
//! (`GIT_CONFIG_NOSYSTEM`), messages are in the C locale so they can be recognised, nothing prompts, and the
//! author and committer are agency's configured identity. So the same call behaves the same on any machine,
//! and a `GIT_DIR` or `GIT_INDEX_FILE` set around us (inside a git hook, say) cannot redirect it.
//!
//! A [`Repo`] is one git work tree: the main one or a linked worktree made by [`Repo::add_worktree`]
//! (see [`worktree`]). Merging with conflict detection lives in [`merge`].

pub mod merge;
pub mod worktree;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{self, CommandSpec, Output, ProcessError};

pub use merge::MergeOutcome;
pub use worktree::WorktreeInfo;

/// Who commits made on an agent's behalf are attributed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Author and committer name.
    pub name: String,
    /// Author and committer email.
    pub email: String,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            name: "agency".to_owned(),
            email: "agency@localhost".to_owned(),
        }
    }
}

/// How git is invoked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOptions {
    /// The git executable, looked up on `PATH` when bare.
    pub program: OsString,
    /// Author and committer of every commit agency makes.
    pub identity: Identity,
    /// `HOME` for git (where it finds the global config); the parent's `HOME` when `None`.
    pub home: Option<PathBuf>,
    /// Limit for one git call.
    pub timeout: Duration,
    /// Bytes of output kept from one git call; a call whose parsed output exceeds it is an error.
    pub output_cap: usize,
}

impl Default for GitOptions {
    fn default() -> Self {
        Self {
            program: "git".into(),
            identity: Identity::default(),
            home: None,
            timeout: Duration::from_secs(120),
            output_cap: 16 * 1024 * 1024,
        }
    }
}

/// Why a git operation failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// git could not be run at all.
    #[error("running git: {0}")]
    Process(#[from] ProcessError),
    /// The path is not inside a git work tree.
    #[error("{} is not inside a git work tree: {detail}", .path.display())]
    NotAWorkTree {
        /// The path given.
        path: PathBuf,
        /// What git said.
        detail: String,
    },
    /// git ran and refused.
    #[error("`git {args}` failed ({status}): {stderr}")]
    Failed {
        /// The arguments, space-joined.
        args: String,
        /// How it ended, e.g. `exit 128`.
        status: String,
        /// The tail of git's stderr, trimmed.
        stderr: String,
    },
    /// git did not finish in time.
    #[error("`git {args}` did not finish within {}s", .timeout.as_secs())]
    TimedOut {
        /// The arguments, space-joined.
        args: String,
        /// The limit that was hit.
        timeout: Duration,
    },
    /// The output needed parsing but was cut at the cap.
    #[error("`git {args}` printed more than the {cap}-byte output cap")]
    OutputTooLarge {
        /// The arguments, space-joined.
        args: String,
        /// The cap in force.
        cap: usize,
    },
    /// A branch name or revision that git would take for an option or reject.
    #[error("invalid {what} `{value}`: {reason}")]
    InvalidName {
        /// `branch` or `revision`.
        what: &'static str,
        /// The value given.
        value: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A file-system operation around git failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The error from the operating system.
        source: std::io::Error,
    },
    /// git's output was not in the expected shape.
    #[error("unexpected output from `git {args}`: {detail}")]
    UnexpectedOutput {
        /// The arguments, space-joined.
        args: String,
        /// What was wrong.
        detail: String,
    },
}

/// One git work tree.
#[derive(Debug, Clone)]
pub struct Repo {
    root: PathBuf,
    options: GitOptions,
}

/// What [`Repo::commit_all`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// A commit was made.
    Committed {
        /// The new commit.
        rev: String,
        /// What it changed.
        files: Vec<FileChange>,
    },
    /// The work tree had no changes (ignored files aside).
    NothingToCommit,
}

/// The facts about one commit that agency records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// The full commit id.
    pub id: String,
    /// Parent ids; two or more for a merge.
    pub parents: Vec<String>,
    /// The author.
    pub author: Identity,
    /// The committer.
    pub committer: Identity,
    /// The first line of the message.
    pub subject: String,
}

/// One changed path between two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// What happened to it.
    pub kind: ChangeKind,
    /// The path (the new one for renames and copies), relative to the repository root.
    pub path: PathBuf,
    /// The old path of a rename or copy.
    pub old_path: Option<PathBuf>,
}

/// The kind of a [`FileChange`], from git's `--name-status` letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// `A`
    Added,
    /// `M`
    Modified,
    /// `D`
    Deleted,
    /// `R`
    Renamed,
    /// `C`
    Copied,
    /// `T`: file ↔ symlink and the like.
    TypeChanged,
    /// `U`
    Unmerged,
    /// Anything else git may print.
    Other,
}

impl ChangeKind {
    fn from_status(status: &str) -> Self {
        match status.chars().next() {
            Some('A') => Self::Added,
            Some('M') => Self::Modified,
            Some('D') => Self::Deleted,
            Some('R') => Self::Renamed,
            Some('C') => Self::Copied,
            Some('T') => Self::TypeChanged,
            Some('U') => Self::Unmerged,
            _ => Self::Other,
        }
    }
}

impl Repo {
    /// Opens the work tree containing `path` (its top level becomes [`Repo::root`]).
    pub fn open(path: &Path, options: GitOptions) -> Result<Self, GitError> {
        let probe = Self {
            root: path.to_path_buf(),
            options,
        };
        let not_a_work_tree = |detail: String| GitError::NotAWorkTree {
            path: path.to_path_buf(),
            detail,
        };
        let output = match probe.run(&["rev-parse", "--is-inside-work-tree", "--show-toplevel"]) {
            Ok(output) => output,
            Err(GitError::Process(ProcessError::MissingCwd { .. })) => {
                return Err(not_a_work_tree("no such directory".to_owned()));
            }
            Err(err) => return Err(err),
        };
        if !output.success() {
            return Err(not_a_work_tree(output.stderr.text().trim().to_owned()));
        }
        let text = output.stdout.text();
        let mut lines = text.lines();
        if lines.next() != Some("true") {
            return Err(not_a_work_tree("it is inside the .git directory".to_owned()));
        }
        let root = lines
            .next()
            .ok_or_else(|| not_a_work_tree("git printed no top level".to_owned()))?;
        Ok(Self {
            root: PathBuf::from(root),
            options: probe.options,
        })
    }

    /// Creates a repository at `path` whose first branch is `initial_branch`, and opens it.
    pub fn init(path: &Path, initial_branch: &str, options: GitOptions) -> Result<Self, GitError> {
        check_name("branch", initial_branch)?;
        std::fs::create_dir_all(path).map_err(|source| GitError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let probe = Self {
            root: path.to_path_buf(),
            options,
        };
        probe.git(&["init", "--quiet", "--initial-branch", initial_branch])?;
        Self::open(path, probe.options)
    }

    /// Opens another work tree of the same repository (a linked worktree, say) with the same options.
    pub fn open_other(&self, path: &Path) -> Result<Self, GitError> {
        Self::open(path, self.options.clone())
    }

    /// The work tree's top-level directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The options git is invoked with.
    pub fn options(&self) -> &GitOptions {
        &self.options
    }

    /// The commit `HEAD` points at.
    pub fn head_rev(&self) -> Result<String, GitError> {
        self.rev_parse("HEAD")
    }

    /// The full commit id `rev` names.
    pub fn rev_parse(&self, rev: &str) -> Result<String, GitError> {
        check_name("revision", rev)?;
        let spec = format!("{rev}^{{commit}}");
        Ok(self
            .git_text(&["rev-parse", "--verify", "--quiet", &spec])?
            .trim()
            .to_owned())
    }

    /// Who made the commit `rev` names, its parents and its subject.
    pub fn commit_info(&self, rev: &str) -> Result<CommitInfo, GitError> {
        check_name("revision", rev)?;
        let args = [
            "show",
            "--no-patch",
            "--format=%H%x00%P%x00%an%x00%ae%x00%cn%x00%ce%x00%s",
            rev,
            "--",
        ];
        let text = self.git_text(&args)?;
        let fields: Vec<&str> = text.trim_end_matches('\n').split('\0').collect();
        let [
            id,
            parents,
            author_name,
            author_email,
            committer_name,
            committer_email,
            subject,
        ] = fields[..]
        else {
            return Err(GitError::UnexpectedOutput {
                args: args.join(" "),
                detail: format!("{text:?}"),
            });
        };
        Ok(CommitInfo {
            id: id.to_owned(),
            parents: parents.split_whitespace().map(str::to_owned).collect(),
            author: Identity {
                name: author_name.to_owned(),
                email: author_email.to_owned(),
            },
            committer: Identity {
                name: committer_name.to_owned(),
                email: committer_email.to_owned(),
            },
            subject: subject.to_owned(),
        })
    }

    /// The branch checked out here, or `None` on a detached `HEAD`.
    pub fn current_branch(&self) -> Result<Option<String>, GitError> {
        let output = self.run(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        Ok(output.success().then(|| output.stdout.text().trim().to_owned()))
    }

    /// Whether a local branch of that name exists.
    pub fn branch_exists(&self, branch: &str) -> Result<bool, GitError> {
        check_name("branch", branch)?;
        let full = format!("refs/heads/{branch}");
        Ok(self.run(&["show-ref", "--verify", "--quiet", &full])?.success())
    }

    /// Local branches whose names start with `prefix` (all of them for `""`), sorted.
    pub fn list_branches(&self, prefix: &str) -> Result<Vec<String>, GitError> {
        // for-each-ref patterns match whole components only, so filter by plain prefix here instead.
        let text = self.git_text(&["for-each-ref", "--format=%(refname:strip=2)", "refs/heads/"])?;
        let mut branches: Vec<String> = text
            .lines()
            .filter(|b| b.starts_with(prefix))
            .map(str::to_owned)
            .collect();
        branches.sort();
        Ok(branches)
    }

    /// Creates `branch` at `base`; fails if it exists.
    pub fn create_branch(&self, branch: &str, base: &str) -> Result<(), GitError> {
        check_name("branch", branch)?;
        check_name("revision", base)?;
        self.git(&["branch", "--no-track", branch, base]).map(drop)
    }

    /// Deletes a local branch; without `force`, only when it is merged into `HEAD` or its upstream.
    pub fn delete_branch(&self, branch: &str, force: bool) -> Result<(), GitError> {
        check_name("branch", branch)?;
        self.git(&["branch", if force { "-D" } else { "-d" }, branch])
            .map(drop)
    }

    /// Whether the work tree or index differs from `HEAD` (untracked files count, ignored ones do not).
    pub fn has_changes(&self) -> Result<bool, GitError> {
        let output = self.git(&["status", "--porcelain", "-z", "--untracked-files=all"])?;
        Ok(!output.stdout.tail.is_empty())
    }

    /// Stages everything and commits it as the configured identity; `NothingToCommit` when there was nothing.
    ///
    /// Hooks are skipped (`--no-verify`) and signing is off: this records what an agent did so nothing is
    /// lost; judging the work is sign-off's job, and a hook or a pinentry prompt must not hang or veto it.
    pub fn commit_all(&self, message: &str) -> Result<CommitOutcome, GitError> {
        self.git(&["add", "--all"])?;
        let files = self.parse_name_status(&["diff", "--cached", "--name-status", "-z", "--find-renames"])?;
        if files.is_empty() {
            return Ok(CommitOutcome::NothingToCommit);
        }
        self.git(&[
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "--message",
            message,
        ])?;
        Ok(CommitOutcome::Committed {
            rev: self.head_rev()?,
            files,
        })
    }

    /// Paths that differ between two revisions (`from` → `to`), renames detected.
    pub fn changed_files(&self, from: &str, to: &str) -> Result<Vec<FileChange>, GitError> {
        check_name("revision", from)?;
        check_name("revision", to)?;
        self.parse_name_status(&["diff", "--name-status", "-z", "--find-renames", from, to, "--"])
    }

    /// The patch between two revisions, as text (invalid UTF-8 replaced).
    pub fn diff(&self, from: &str, to: &str) -> Result<String, GitError> {
        check_name("revision", from)?;
        check_name("revision", to)?;
        self.git_text(&["diff", "--no-color", "--no-ext-diff", from, to, "--"])
    }

    fn parse_name_status(&self, args: &[&str]) -> Result<Vec<FileChange>, GitError> {
        let output = self.git_complete(args)?;
        parse_name_status(&output.stdout.tail).ok_or_else(|| GitError::UnexpectedOutput {
            args: args.join(" "),
            detail: "a status without its path".to_owned(),
        })
    }

    /// Runs git here and returns how it ended, failed or not; only a timeout is an error.
    pub(crate) fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, GitError> {
        let spec = self.command(args);
        let output = process::run(&spec)?;
        if output.timed_out {
            return Err(GitError::TimedOut {
                args: join_args(args),
                timeout: self.options.timeout,
            });
        }
        Ok(output)
    }

    /// Runs git here; a non-zero exit is an error carrying git's stderr.
    pub(crate) fn git<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, GitError> {
        let output = self.run(args)?;
        if !output.success() {
            return Err(failed(args, &output));
        }
        Ok(output)
    }

    /// Like [`Repo::git`], and the output must not have been truncated.
    pub(crate) fn git_complete<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, GitError> {
        let output = self.git(args)?;
        if output.stdout.truncated_bytes > 0 {
            return Err(GitError::OutputTooLarge {
                args: join_args(args),
                cap: self.options.output_cap,
            });
        }
        Ok(output)
    }

    pub(crate) fn git_text<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, GitError> {
        Ok(self.git_complete(args)?.stdout.text().into_owned())
    }

    fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> CommandSpec {
        let options = &self.options;
        let identity = &options.identity;
        let mut spec = CommandSpec::new(&options.program)
            .args(args.iter().map(|a| a.as_ref().to_os_string()))
            .cwd(&self.root)
            .timeout(options.timeout)
            .output_cap(options.output_cap)
            .inherit_env("PATH")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .env("GIT_PAGER", "cat")
            .env("LC_ALL", "C")
            .env("GIT_AUTHOR_NAME", &identity.name)
            .env("GIT_AUTHOR_EMAIL", &identity.email)
            .env("GIT_COMMITTER_NAME", &identity.name)
            .env("GIT_COMMITTER_EMAIL", &identity.email);
        spec = match &options.home {
            Some(home) => spec.env("HOME", home),
            None => spec.inherit_env("HOME"),
        };
        spec
    }
}

/// Refuses names git would read as an option, or that cannot be a revision at all.
pub(crate) fn check_name(what: &'static str, value: &str) -> Result<(), GitError> {
    let reason = if value.is_empty() {
        "it is empty"
    } else if value.starts_with('-') {
        "it starts with `-`"
    } else if value.chars().any(|c| c.is_ascii_control() || c == ' ') {
        "it contains a space or control character"
    } else {
        return Ok(());
    };
    Err(GitError::InvalidName {
        what,
        value: value.to_owned(),
        reason,
    })
}

pub(crate) fn failed<S: AsRef<OsStr>>(args: &[S], output: &Output) -> GitError {
    GitError::Failed {
        args: join_args(args),
        status: output.describe(),
        stderr: output.stderr.text().trim().to_owned(),
    }
}

fn join_args<S: AsRef<OsStr>>(args: &[S]) -> String {
    args.iter()
        .map(|a| a.as_ref().to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `--name-status -z` output: `status NUL path NUL`, with a second path for renames and copies.
fn parse_name_status(bytes: &[u8]) -> Option<Vec<FileChange>> {
    let mut fields = bytes.split(|&b| b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    let to_path = |field: &[u8]| PathBuf::from(OsStr::from_bytes(field));
    while let Some(status) = fields.next() {
        let kind = ChangeKind::from_status(&String::from_utf8_lossy(status));
        let first = to_path(fields.next()?);
        let change = if matches!(kind, ChangeKind::Renamed | ChangeKind::Copied) {
            FileChange {
                kind,
                path: to_path(fields.next()?),
                old_path: Some(first),
            }
        } else {
            FileChange {
                kind,
                path: first,
                old_path: None,
            }
        };
        changes.push(change);
    }
    Some(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_pins_gits_z_format() {
        let raw = b"M\0src/lib.rs\0R087\0old name.txt\0new name.txt\0A\0a\xffb\0D\0gone\0";
        let changes = parse_name_status(raw).unwrap();
        assert_eq!(changes.len(), 4);
        assert_eq!(
            changes[0],
            FileChange {
                kind: ChangeKind::Modified,
                path: "src/lib.rs".into(),
                old_path: None
            }
        );
        assert_eq!(
            changes[1],
            FileChange {
                kind: ChangeKind::Renamed,
                path: "new name.txt".into(),
                old_path: Some("old name.txt".into())
            }
        );
        assert_eq!(changes[2].path.as_os_str().as_bytes(), b"a\xffb");
        assert_eq!(changes[3].kind, ChangeKind::Deleted);
        assert_eq!(parse_name_status(b"M\0"), None);
        assert_eq!(parse_name_status(b""), Some(vec![]));
    }

    #[test]
    fn option_like_names_are_refused() {
        assert!(check_name("branch", "--force").is_err());
        assert!(check_name("branch", "").is_err());
        assert!(check_name("revision", "a b").is_err());
        assert!(check_name("revision", "HEAD~1").is_ok());
    }
}
