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

/// What changed between two revisions, from one `git diff`: the changed paths (what `--name-status` says)
/// and the patch, or its start. See [`Repo::diff_with_changes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    /// The changed paths, renames detected.
    pub changes: Vec<FileChange>,
    /// The first bytes of the patch (all of it unless [`Diff::is_cut`]).
    pub patch: Vec<u8>,
    /// The size of the whole patch.
    pub total_bytes: u64,
}

impl Diff {
    /// Whether the patch went on past [`Diff::patch`].
    pub fn is_cut(&self) -> bool {
        self.total_bytes > self.patch.len() as u64
    }

    /// The patch kept, as [`Repo::diff_head`] gives it (invalid UTF-8 replaced).
    pub fn head(&self) -> DiffHead {
        DiffHead {
            text: String::from_utf8_lossy(&self.patch).into_owned(),
            total_bytes: self.total_bytes,
        }
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
        status.chars().next().map_or(Self::Other, Self::from_letter)
    }

    /// The kind git's `--name-status` letter names ([`ChangeKind::Other`] for one it has no kind for).
    pub fn from_letter(letter: char) -> Self {
        match letter {
            'A' => Self::Added,
            'M' => Self::Modified,
            'D' => Self::Deleted,
            'R' => Self::Renamed,
            'C' => Self::Copied,
            'T' => Self::TypeChanged,
            'U' => Self::Unmerged,
            _ => Self::Other,
        }
    }

    /// Its `--name-status` letter (`X`, git's own for an unknown change, for [`ChangeKind::Other`]).
    pub fn letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Modified => 'M',
            Self::Deleted => 'D',
            Self::Renamed => 'R',
            Self::Copied => 'C',
            Self::TypeChanged => 'T',
            Self::Unmerged => 'U',
            Self::Other => 'X',
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
    /// See [`Repo::stage_and_commit`].
    pub fn commit_all(&self, message: &str) -> Result<CommitOutcome, GitError> {
        if !self.stage_and_commit(message)? {
            return Ok(CommitOutcome::NothingToCommit);
        }
        Ok(CommitOutcome::Committed {
            rev: self.head_rev()?,
        })
    }

    /// Stages everything and commits it as the configured identity: whether a commit was made (`false`:
    /// the index matched `HEAD`, nothing to commit). Two git processes: `add` and `commit`. The new commit's
    /// id is not asked for here: the runner resolves it together with the slice's base in one `rev-parse`
    /// ([`Repo::commit_all`] asks for it alone).
    ///
    /// git itself refuses a commit that changes nothing, so that is not asked beforehand; only when the
    /// commit fails is the index compared with `HEAD`, to tell "nothing to commit" from a real failure
    /// without reading git's (translatable) messages.
    ///
    /// Hooks are skipped (`--no-verify`) and signing is off: this records what an agent did so nothing is
    /// lost; judging the work is sign-off's job, and a hook or a pinentry prompt must not hang or veto it.
    pub fn stage_and_commit(&self, message: &str) -> Result<bool, GitError> {
        self.run_git(&["add", "--all"])?;
        let args = [
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "--message",
            message,
        ];
        let output = self.run(&args)?;
        if output.success() {
            return Ok(true);
        }
        let unchanged = ["diff", "--cached", "--quiet"];
        let compared = self.run(&unchanged)?;
        match compared.exit_code {
            Some(0) => Ok(false),
            Some(1) => Err(super::failed(&args, &output)),
            _ => Err(super::failed(&unchanged, &compared)),
        }
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

    /// The changed paths between two revisions (`from` → `to`, renames detected, as
    /// [`Repo::changed_files`] lists them) and the first `max_patch_bytes` of the patch between them (as
    /// [`Repo::diff`] prints it), from one git process (`--raw -z -p`): a slice's sign-off needs both. The
    /// paths are all kept (an error past the output cap); of the patch only its start is, and the rest is
    /// counted.
    pub fn diff_with_changes(&self, from: &str, to: &str, max_patch_bytes: usize) -> Result<Diff, GitError> {
        check_name("revision", from)?;
        check_name("revision", to)?;
        let args = [
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--raw",
            "-z",
            "-p",
            "--find-renames",
            from,
            to,
            "--",
        ];
        let too_large = || GitError::OutputTooLarge {
            args: args.join(" "),
            cap: self.options.output_cap,
        };
        let mut split = RawThenPatch::new(max_patch_bytes);
        if max_patch_bytes >= self.options.output_cap {
            // All of it is wanted anyway: read it whole on this thread, as every other call does.
            split.feed(&self.git_complete(&args)?.stdout.tail);
        } else {
            let mut child = process::spawn(&self.git_spec(&args), &CancelToken::new())?;
            if let Some(mut stdout) = child.stdout.take() {
                let mut chunk = vec![0; 64 * 1024];
                loop {
                    match stdout.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(read) => split.feed(&chunk[..read]),
                        Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                        // A read that fails keeps what was read; git's exit status says the rest.
                        Err(_) => break,
                    }
                    if split.raw.len() > self.options.output_cap {
                        // Too many paths to keep: the rest is read only so that git can finish.
                        let _ = std::io::copy(&mut stdout, &mut std::io::sink());
                        break;
                    }
                }
            }
            let output = self.in_time(&args, child.wait()?)?;
            if split.raw.len() > self.options.output_cap {
                return Err(too_large());
            }
            if !output.success() {
                return Err(super::failed(&args, &output));
            }
        }
        if split.raw.len() > self.options.output_cap {
            return Err(too_large());
        }
        split.finish().ok_or_else(|| GitError::UnexpectedOutput {
            args: args.join(" "),
            detail: "a `--raw` entry without its status or path".to_owned(),
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

/// Splits `git diff --raw -z -p` output as it comes: the raw entries (`:modes ids status NUL path NUL`, a
/// second path for renames and copies), an empty entry, then the patch, of which the first `max` bytes are
/// kept and the rest counted.
struct RawThenPatch {
    raw: Vec<u8>,
    /// Where the next raw entry starts in `raw` (everything before it is whole entries).
    scanned: usize,
    in_patch: bool,
    patch: Vec<u8>,
    max: usize,
    total: u64,
}

impl RawThenPatch {
    fn new(max: usize) -> Self {
        Self {
            raw: Vec::new(),
            scanned: 0,
            in_patch: false,
            patch: Vec::new(),
            max,
            total: 0,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if self.in_patch {
            self.keep_patch(bytes);
            return;
        }
        self.raw.extend_from_slice(bytes);
        while let Some(&first) = self.raw.get(self.scanned) {
            if first == 0 {
                // The empty entry between the raw part and the patch.
                let patch = self.raw.split_off(self.scanned + 1);
                self.raw.truncate(self.scanned);
                self.in_patch = true;
                self.keep_patch(&patch);
                return;
            }
            match raw_entry_end(&self.raw[self.scanned..]) {
                Some(end) => self.scanned += end,
                None => return,
            }
        }
    }

    fn keep_patch(&mut self, bytes: &[u8]) {
        let room = self.max.saturating_sub(self.patch.len()).min(bytes.len());
        self.patch.extend_from_slice(&bytes[..room]);
        self.total += bytes.len() as u64;
    }

    /// The changes and the patch; `None` when the raw part is malformed or ends mid-entry.
    fn finish(self) -> Option<Diff> {
        if self.scanned != self.raw.len() {
            return None;
        }
        let mut changes = Vec::new();
        let mut rest = &self.raw[..];
        while !rest.is_empty() {
            let end = raw_entry_end(rest)?;
            let mut fields = rest[..end].split(|&b| b == 0);
            let header = fields.next()?;
            let status = header.rsplit(|&b| b == b' ').next()?;
            changes.push(change(status, fields.next()?, fields.next())?);
            rest = &rest[end..];
        }
        Some(Diff {
            changes,
            patch: self.patch,
            total_bytes: self.total,
        })
    }
}

/// The length of the raw entry `bytes` starts with, NULs included; `None` while it is incomplete (or is
/// not a raw entry).
fn raw_entry_end(bytes: &[u8]) -> Option<usize> {
    if bytes.first() != Some(&b':') {
        return None;
    }
    let header = bytes.iter().position(|&b| b == 0)?;
    let status = bytes[..header].rsplit(|&b| b == b' ').next()?;
    let paths = if matches!(status.first(), Some(b'R' | b'C')) {
        2
    } else {
        1
    };
    let mut end = header + 1;
    for _ in 0..paths {
        end += bytes.get(end..)?.iter().position(|&b| b == 0)? + 1;
    }
    Some(end)
}

/// One change from its status letters and paths (the second one for renames and copies).
fn change(status: &[u8], first: &[u8], second: Option<&[u8]>) -> Option<FileChange> {
    let kind = ChangeKind::from_status(&String::from_utf8_lossy(status));
    let to_path = |field: &[u8]| PathBuf::from(OsStr::from_bytes(field));
    Some(if matches!(kind, ChangeKind::Renamed | ChangeKind::Copied) {
        FileChange {
            kind,
            path: to_path(second?),
            old_path: Some(to_path(first)),
        }
    } else {
        FileChange {
            kind,
            path: to_path(first),
            old_path: None,
        }
    })
}

/// Parses `--name-status -z` output: `status NUL path NUL`, with a second path for renames and copies.
fn parse_name_status(bytes: &[u8]) -> Option<Vec<FileChange>> {
    let mut fields = bytes.split(|&b| b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let Some(status) = fields.next() {
        let first = fields.next()?;
        let second = match status.first() {
            Some(b'R' | b'C') => Some(fields.next()?),
            _ => None,
        };
        changes.push(change(status, first, second)?);
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

    /// What `git diff --raw -z -p --find-renames` printed for a rename, a path with a space and one that is
    /// not UTF-8, then the patch (shortened).
    const RAW_THEN_PATCH: &[u8] = b":100644 100644 0fdf397 0fdf397 R100\0old name.txt\0new name.txt\0\
        :000000 100644 0000000 b680253 A\0a\xffb\0:100644 000000 975fbec 0000000 D\0gone\0\0\
        diff --git a/old name.txt b/new name.txt\nsimilarity index 100%\n";

    #[test]
    fn raw_then_patch_splits_whole_or_byte_by_byte_and_cuts_the_patch() {
        let patch = &RAW_THEN_PATCH[RAW_THEN_PATCH.len() - 63..];
        assert!(patch.starts_with(b"diff --git"));
        let mut whole = RawThenPatch::new(usize::MAX);
        whole.feed(RAW_THEN_PATCH);
        let whole = whole.finish().unwrap();
        assert_eq!(
            whole.changes,
            parse_name_status(b"R100\0old name.txt\0new name.txt\0A\0a\xffb\0D\0gone\0").unwrap()
        );
        assert_eq!((whole.patch.as_slice(), whole.total_bytes), (patch, 63));
        assert!(!whole.is_cut());

        let mut bytewise = RawThenPatch::new(10);
        for byte in RAW_THEN_PATCH {
            bytewise.feed(std::slice::from_ref(byte));
        }
        let cut = bytewise.finish().unwrap();
        assert_eq!(cut.changes, whole.changes);
        assert_eq!((cut.patch.as_slice(), cut.total_bytes), (&patch[..10], 63));
        assert!(cut.is_cut());
        assert_eq!(cut.head().text, "diff --git");
    }

    #[test]
    fn raw_then_patch_refuses_a_torn_or_foreign_raw_part() {
        let empty = RawThenPatch::new(8);
        assert_eq!(empty.finish().unwrap().changes, vec![]);
        for torn in [
            &b":100644 100644 a b R100\0old\0"[..],
            b":100644 100644 a b M",
            b"M\0path\0",
        ] {
            let mut split = RawThenPatch::new(8);
            split.feed(torn);
            assert_eq!(split.finish(), None, "{:?}", String::from_utf8_lossy(torn));
        }
    }
}
