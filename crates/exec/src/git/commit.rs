//! Commits on an agent's behalf, and what changed between revisions.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{GitError, Identity, Repo, check_name};
use crate::process::{self, CancelToken};

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

/// The start of a patch, from [`Repo::diff_head`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffHead {
    /// The first bytes of the patch.
    pub text: String,
    /// The size of the whole patch.
    pub total_bytes: u64,
}

impl DiffHead {
    /// Whether the patch went on past [`DiffHead::text`].
    pub fn is_cut(&self) -> bool {
        self.total_bytes > self.text.len() as u64
    }
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

    /// Whether the work tree or index differs from `HEAD` (untracked files count, ignored ones do not).
    pub fn has_changes(&self) -> Result<bool, GitError> {
        let output = self.run_git(&["status", "--porcelain", "-z", "--untracked-files=all"])?;
        Ok(!output.stdout.tail.is_empty())
    }

    /// Stages everything and commits it as the configured identity; `NothingToCommit` when there was nothing.
    ///
    /// Hooks are skipped (`--no-verify`) and signing is off: this records what an agent did so nothing is
    /// lost; judging the work is sign-off's job, and a hook or a pinentry prompt must not hang or veto it.
    pub fn commit_all(&self, message: &str) -> Result<CommitOutcome, GitError> {
        self.run_git(&["add", "--all"])?;
        let files = self.parse_name_status(&["diff", "--cached", "--name-status", "-z", "--find-renames"])?;
        if files.is_empty() {
            return Ok(CommitOutcome::NothingToCommit);
        }
        self.run_git(&[
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

    /// The content of `path` (relative to the repository root) at `rev`; `None` when it has no such file.
    pub fn file_at(&self, rev: &str, path: &Path) -> Result<Option<Vec<u8>>, GitError> {
        check_name("revision", rev)?;
        let mut object = OsString::from(format!("{rev}:"));
        object.push(path.as_os_str());
        let exists = self
            .run(&[OsStr::new("cat-file"), "-e".as_ref(), object.as_os_str()])?
            .success();
        if !exists {
            return Ok(None);
        }
        let output = self.git_complete(&[OsStr::new("cat-file"), "blob".as_ref(), object.as_os_str()])?;
        Ok(Some(output.stdout.tail))
    }

    /// Paths that differ between two revisions (`from` → `to`), renames detected.
    pub fn changed_files(&self, from: &str, to: &str) -> Result<Vec<FileChange>, GitError> {
        check_name("revision", from)?;
        check_name("revision", to)?;
        self.parse_name_status(&["diff", "--name-status", "-z", "--find-renames", from, to, "--"])
    }

    /// The first `max_bytes` of the patch between two revisions (invalid UTF-8 replaced), and how many
    /// bytes the whole patch has. Memory stays bounded however large the patch is: the rest is read and
    /// counted, not kept (a run's whole integration branch can be a patch of many megabytes, of which a
    /// judge is shown the start).
    pub fn diff_head(&self, from: &str, to: &str, max_bytes: usize) -> Result<DiffHead, GitError> {
        check_name("revision", from)?;
        check_name("revision", to)?;
        let args = ["diff", "--no-color", "--no-ext-diff", from, to, "--"];
        let mut child = process::spawn(&self.git_spec(&args), &CancelToken::new())?;
        let mut head = Vec::with_capacity(max_bytes.min(64 * 1024));
        let mut rest = 0;
        if let Some(mut stdout) = child.stdout.take() {
            // A read that fails keeps what was read; git's exit status says the rest.
            let _ = (&mut stdout).take(max_bytes as u64).read_to_end(&mut head);
            rest = std::io::copy(&mut stdout, &mut std::io::sink()).unwrap_or(0);
        }
        let output = self.in_time(&args, child.wait()?)?;
        if !output.success() {
            return Err(super::failed(&args, &output));
        }
        let total_bytes = head.len() as u64 + rest;
        Ok(DiffHead {
            text: String::from_utf8_lossy(&head).into_owned(),
            total_bytes,
        })
    }

    /// The patch between two revisions, as text (invalid UTF-8 replaced).
    pub fn diff(&self, from: &str, to: &str) -> Result<String, GitError> {
        check_name("revision", from)?;
        check_name("revision", to)?;
        self.git_text(&["diff", "--no-color", "--no-ext-diff", from, to, "--"])
    }

    pub(super) fn parse_name_status(&self, args: &[&str]) -> Result<Vec<FileChange>, GitError> {
        let output = self.git_complete(args)?;
        parse_name_status(&output.stdout.tail).ok_or_else(|| GitError::UnexpectedOutput {
            args: args.join(" "),
            detail: "a status without its path".to_owned(),
        })
    }
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
}
