//! Linked worktrees: one per brief, so agents working in parallel never see each other's uncommitted
//! changes, and a dedicated one per merge where git cannot merge without a checkout, so the user's own
//! checkout is never touched.

use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{GitError, Repo, check_name};

/// Held while git adds, removes, prunes or lists worktrees. git does not make these safe against each
/// other: an `add` reads every entry of `.git/worktrees` (failing on one another `add` is still writing),
/// so does a `list` (`fatal: failed to read .git/worktrees/<name>/commondir` while an `add` writes it), and
/// a `prune` deletes an entry another `add` has only begun. Within one process (the runner creating agents'
/// worktrees while sign-offs make their clean checkouts on other threads) they take turns on this mutex;
/// across processes (a run's driver and an `agency worker` on the same repository) on [`LOCK_FILE`].
static WORKTREE_CHANGES: Mutex<()> = Mutex::new(());

/// The file in the repository's common git directory whose exclusive lock every agency process holds while
/// it changes worktrees.
pub const LOCK_FILE: &str = "agency-worktrees.lock";

/// A turn at changing the repository's worktrees: this process's mutex, then the repository's file lock
/// (released when the file is closed, also when the process dies).
pub(super) struct Turn {
    _file: std::fs::File,
    _thread: MutexGuard<'static, ()>,
}

impl Repo {
    pub(super) fn worktree_changes(&self) -> Result<Turn, GitError> {
        let thread = WORKTREE_CHANGES.lock().unwrap_or_else(PoisonError::into_inner);
        let path = self.common_dir().join(LOCK_FILE);
        let io = |source| GitError::Io {
            path: path.clone(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        Ok(Turn {
            _file: file,
            _thread: thread,
        })
    }
}

/// One entry of `git worktree list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    /// Its directory.
    pub path: PathBuf,
    /// The commit checked out (absent in a bare repository).
    pub head: Option<String>,
    /// The branch checked out, short form (`None` when detached or bare).
    pub branch: Option<String>,
    /// The main work tree (listed first by git), which agency never removes.
    pub is_main: bool,
    /// Locked against pruning and removal.
    pub locked: bool,
    /// Its directory is gone; `git worktree prune` will forget it.
    pub prunable: bool,
}

impl Repo {
    /// Creates `branch` at `base` and checks it out in a new worktree at `path`; returns that work tree.
    pub fn add_worktree(&self, path: &Path, branch: &str, base: &str) -> Result<Repo, GitError> {
        check_name("branch", branch)?;
        check_name("revision", base)?;
        let _turn = self.worktree_changes()?;
        self.run_git(&[
            OsStr::new("worktree"),
            "add".as_ref(),
            "--quiet".as_ref(),
            "-b".as_ref(),
            branch.as_ref(),
            path.as_os_str(),
            base.as_ref(),
        ])?;
        self.open_linked(path)
    }

    /// Checks out the existing `branch` in a new worktree at `path` (git refuses a branch already checked
    /// out elsewhere); returns that work tree.
    pub fn checkout_worktree(&self, path: &Path, branch: &str) -> Result<Repo, GitError> {
        check_name("branch", branch)?;
        let _turn = self.worktree_changes()?;
        self.run_git(&[
            OsStr::new("worktree"),
            "add".as_ref(),
            "--quiet".as_ref(),
            path.as_os_str(),
            branch.as_ref(),
        ])?;
        self.open_linked(path)
    }

    /// Checks out `rev` on a detached `HEAD` in a new worktree at `path` (for reading or verifying one
    /// commit without tying up a branch); returns that work tree.
    pub fn add_detached_worktree(&self, path: &Path, rev: &str) -> Result<Repo, GitError> {
        check_name("revision", rev)?;
        let args = [
            OsStr::new("worktree"),
            "add".as_ref(),
            "--quiet".as_ref(),
            "--detach".as_ref(),
        ];
        let _turn = self.worktree_changes()?;
        self.run_git(&[&args[..], &[path.as_os_str(), rev.as_ref()]].concat())?;
        self.open_linked(path)
    }

    /// Moves the linked worktree at `spare`, detached at `commit`, to `dest` (a new path beside it) without
    /// a git process: its entry's `gitdir` is pointed at `dest`, then the directory renamed — what `git
    /// worktree move` does. The runner makes a worktree ahead while a gate waits and hands it to the first
    /// brief that starts at that commit ([`Repo::add_detached_worktree`] is a checkout of every file; this is
    /// two renames). `Ok(false)`, with nothing changed, unless all of this holds: `spare` and its entry name
    /// each other as git recorded them (absolute paths), it is not locked, its `HEAD` is exactly `commit`
    /// (detached; a reftable repository keeps `HEAD` elsewhere, so never), `dest` does not exist and has the
    /// same parent directory. The entry is pointed away first: a crash
    /// between the two steps leaves `spare` pointing at an entry that no longer names it back, which no
    /// caller adopts again and `git worktree prune` forgets; never a worktree at `dest` that git would prune.
    pub fn adopt_worktree(&self, spare: &Path, dest: &Path, commit: &str) -> Result<bool, GitError> {
        if spare.parent() != dest.parent() || dest.exists() || !is_object_id(commit) {
            return Ok(false);
        }
        let _turn = self.worktree_changes()?;
        let Some(admin) = self.recorded_admin(spare) else {
            return Ok(false);
        };
        if admin.join("locked").exists() {
            return Ok(false);
        }
        let head = std::fs::read_to_string(admin.join("HEAD")).unwrap_or_default();
        if head.trim_end() != commit {
            return Ok(false);
        }
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| GitError::Io { path, source }
        };
        let gitdir = admin.join("gitdir");
        let staged = admin.join("gitdir.agency-adopt");
        let mut text = dest.join(".git").into_os_string().into_vec();
        text.push(b'\n');
        std::fs::write(&staged, text).map_err(io(&staged))?;
        std::fs::rename(&staged, &gitdir).map_err(io(&gitdir))?;
        std::fs::rename(spare, dest).map_err(io(dest))?;
        Ok(true)
    }

    /// The commit local `branch` points at, read from the ref files without a git process: its loose ref,
    /// else its line in `packed-refs`. `None` when that does not say for certain (a symbolic or unreadable
    /// ref, a reftable repository, no such branch): the caller asks git instead.
    pub fn branch_commit_on_disk(&self, branch: &str) -> Option<String> {
        check_name("branch", branch).ok()?;
        let full = format!("refs/heads/{branch}");
        match std::fs::read_to_string(self.common_dir.join(&full)) {
            Ok(text) => return Some(text.trim_end().to_owned()).filter(|id| is_object_id(id)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
        let packed = std::fs::read_to_string(self.common_dir.join("packed-refs")).ok()?;
        packed.lines().find_map(|line| {
            let (id, name) = line.split_once(' ')?;
            (name == full && is_object_id(id)).then(|| id.to_owned())
        })
    }

    /// Opens a linked worktree of this repository. When its `.git` file points into this repository's
    /// `worktrees/` directory, that is answer enough and no git process is started (the runner opens a
    /// worktree per brief); anything else is left to git, as in [`Repo::open_other`].
    pub fn open_linked(&self, path: &Path) -> Result<Repo, GitError> {
        match self.linked_root(path) {
            Some(root) => Ok(Repo {
                root,
                common_dir: self.common_dir.clone(),
                options: self.options.clone(),
                env: self.env.clone(),
                lock_look: self.lock_look.clone(),
            }),
            None => self.open_other(path),
        }
    }

    /// `path`, resolved as git resolves a top level, when it is the top of one of this repository's linked
    /// worktrees.
    fn linked_root(&self, path: &Path) -> Option<PathBuf> {
        self.linked_root_as_recorded(path)
            .or_else(|| self.linked_root_resolved(path))
    }

    /// `path` as it is, when it is exactly what git recorded for one of this repository's linked worktrees:
    /// its `.git` file names `<common dir>/worktrees/<id>`, and that entry's `gitdir` file names `path/.git`
    /// back. git writes both with the paths it resolved, so nothing needs resolving here: two small reads
    /// where [`Repo::linked_root_resolved`] resolves three paths a component at a time (a `readlink` each,
    /// a dozen per worktree the runner opens).
    fn linked_root_as_recorded(&self, path: &Path) -> Option<PathBuf> {
        self.recorded_admin(path).map(|_| path.to_path_buf())
    }

    /// The worktree's entry in `<common dir>/worktrees/` (git's "admin" directory), when the worktree at
    /// `path` and that entry name each other exactly as git recorded them: its `.git` file names
    /// `<common dir>/worktrees/<one name>`, and that entry's `gitdir` file names `path/.git` back. An agent
    /// can rewrite the `.git` file in its own worktree, so the entry is never taken from it alone: a path
    /// anywhere else, or another worktree's entry (whose `gitdir` names that worktree), is refused.
    pub(super) fn recorded_admin(&self, path: &Path) -> Option<PathBuf> {
        let text = std::fs::read_to_string(path.join(".git")).ok()?;
        let named = Path::new(text.strip_prefix("gitdir: ")?.trim_end());
        // One plain name under `worktrees/`: not `..`, not a longer path (`parent` alone would pass
        // `worktrees/..`).
        let name = match named.components().next_back()? {
            std::path::Component::Normal(name) => name,
            _ => return None,
        };
        let admin = self.common_dir.join("worktrees").join(name);
        if !named.is_absolute() || named != admin {
            return None;
        }
        let back = std::fs::read_to_string(admin.join("gitdir")).ok()?;
        (Path::new(back.trim_end()) == path.join(".git")).then_some(admin)
    }

    /// [`Repo::linked_root`] with every path resolved: a relative `.git` file (git 2.48's
    /// `worktree.useRelativePaths`), a path through a symbolic link.
    fn linked_root_resolved(&self, path: &Path) -> Option<PathBuf> {
        let root = std::fs::canonicalize(path).ok()?;
        let text = std::fs::read_to_string(root.join(".git")).ok()?;
        // Relative since git 2.48 with `worktree.useRelativePaths`: relative to the worktree's top.
        let gitdir = root.join(text.strip_prefix("gitdir: ")?.trim_end());
        let admin = std::fs::canonicalize(self.common_dir.join("worktrees")).ok()?;
        let gitdir = std::fs::canonicalize(gitdir).ok()?;
        (gitdir.parent()? == admin).then_some(root)
    }

    /// Removes the worktree at `path` (with `force`, even with uncommitted changes); git forgets it with it.
    /// A directory deleted by hand is pruned instead (with every other worktree whose directory is gone).
    pub fn remove_worktree(&self, path: &Path, force: bool) -> Result<(), GitError> {
        let _turn = self.worktree_changes()?;
        self.remove_worktree_in_turn(path, force)
    }

    /// [`Repo::remove_worktree`] for a caller already holding the turn.
    pub(super) fn remove_worktree_in_turn(&self, path: &Path, force: bool) -> Result<(), GitError> {
        if !path.exists() {
            return self.prune();
        }
        let mut args = vec![OsStr::new("worktree"), "remove".as_ref()];
        if force {
            args.push("--force".as_ref());
        }
        args.push(path.as_os_str());
        self.run_git(&args).map(drop)
    }

    /// Forgets worktrees whose directories no longer exist.
    pub fn prune_worktrees(&self) -> Result<(), GitError> {
        let _turn = self.worktree_changes()?;
        self.prune()
    }

    fn prune(&self) -> Result<(), GitError> {
        self.run_git(&["worktree", "prune"]).map(drop)
    }

    /// Every worktree of the repository, the main one first. Takes its turn with the worktree changes of
    /// this process and of agency's others: `agency gc` listing while a runner adds one would otherwise
    /// read a half-written entry and fail.
    pub fn list_worktrees(&self) -> Result<Vec<WorktreeInfo>, GitError> {
        let _turn = self.worktree_changes()?;
        let args = ["worktree", "list", "--porcelain", "-z"];
        let output = self.git_complete(&args)?;
        parse_worktree_list(&output.stdout.tail).ok_or_else(|| GitError::UnexpectedOutput {
            args: args.join(" "),
            detail: "an entry without a `worktree` line".to_owned(),
        })
    }
}

/// Whether `text` is a full object id (SHA-1 or SHA-256, lower-case hex), as git writes one in a ref file.
fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Parses `git worktree list --porcelain -z`: attribute lines ending in NUL, entries separated by an
/// empty line (a lone NUL).
fn parse_worktree_list(bytes: &[u8]) -> Option<Vec<WorktreeInfo>> {
    let mut entries = Vec::new();
    let mut current: Option<WorktreeInfo> = None;
    for line in bytes.split(|&b| b == 0) {
        if line.is_empty() {
            entries.extend(current.take());
            continue;
        }
        let (key, value) = match line.iter().position(|&b| b == b' ') {
            Some(space) => (&line[..space], Some(&line[space + 1..])),
            None => (line, None),
        };
        if key == b"worktree" {
            entries.extend(current.take());
            current = Some(WorktreeInfo {
                path: PathBuf::from(OsStr::from_bytes(value?)),
                head: None,
                branch: None,
                is_main: entries.is_empty(),
                locked: false,
                prunable: false,
            });
            continue;
        }
        let entry = current.as_mut()?;
        let text = || value.map(|v| String::from_utf8_lossy(v).into_owned());
        match key {
            b"HEAD" => entry.head = text(),
            b"branch" => {
                entry.branch = text().map(|b| b.strip_prefix("refs/heads/").map_or(b.clone(), str::to_owned))
            }
            b"locked" => entry.locked = true,
            b"prunable" => entry.prunable = true,
            // `bare`, `detached` and attributes newer gits add carry nothing we use.
            _ => {}
        }
    }
    entries.extend(current);
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_list_pins_gits_z_format() {
        let raw = b"worktree /repo\0HEAD 1111\0branch refs/heads/main\0\0\
                    worktree /wt/a b\0HEAD 2222\0branch refs/heads/agency/0123abcd/ws/89abcdef\0locked reason\0\0\
                    worktree /wt/gone\0HEAD 3333\0detached\0prunable gitdir file points to non-existent location\0\0";
        let list = parse_worktree_list(raw).unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(
            list[0],
            WorktreeInfo {
                path: "/repo".into(),
                head: Some("1111".into()),
                branch: Some("main".into()),
                is_main: true,
                locked: false,
                prunable: false,
            }
        );
        assert_eq!(list[1].path, PathBuf::from("/wt/a b"));
        assert_eq!(list[1].branch.as_deref(), Some("agency/0123abcd/ws/89abcdef"));
        assert!(list[1].locked && !list[1].is_main);
        assert_eq!(list[2].branch, None);
        assert!(list[2].prunable);
        assert_eq!(parse_worktree_list(b"HEAD 1111\0"), None);
    }

    /// A worktree opened by the path git recorded is recognised from its two small files alone; one opened
    /// through a symbolic link is resolved, and comes back as the path git knows.
    #[test]
    fn a_linked_worktree_is_recognised_as_recorded_and_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repo = Repo::init(&root.join("repo"), "main", crate::GitOptions::default()).unwrap();
        std::fs::write(root.join("repo/README"), "x\n").unwrap();
        repo.commit_all("first").unwrap();
        let path = root.join("trees/one");
        repo.add_worktree(&path, "one", "main").unwrap();

        assert_eq!(repo.linked_root_as_recorded(&path), Some(path.clone()));
        assert_eq!(repo.open_linked(&path).unwrap().root(), path);
        std::os::unix::fs::symlink(root.join("trees"), root.join("link")).unwrap();
        let linked = root.join("link/one");
        assert_eq!(repo.linked_root_as_recorded(&linked), None);
        assert_eq!(repo.open_linked(&linked).unwrap().root(), path);
        // The main work tree is not a linked one.
        assert_eq!(repo.linked_root_as_recorded(&root.join("repo")), None);
    }
}
