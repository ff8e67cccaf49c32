//! Git lock files left behind. git guards `index`, `packed-refs`, `HEAD`, `config` and every ref with a
//! `<file>.lock` it creates exclusively and renames or removes when done. A git process that dies between
//! the two (killed, out of memory, a lost machine) leaves the lock, and every later git command that needs
//! that file fails — `packed-refs.lock` after waiting a second each time, which turned a 4 s run into 45 s
//! with no message at all.
//!
//! Before a git command of agency's, the common git directory's `packed-refs.lock`, `index.lock`,
//! `HEAD.lock` and `config.lock` are looked for (a `stat` each) — before the first command of a handle on
//! the repository, then at most once a second, and before the command after one that was killed, died of a
//! signal or took as long as git waits on a lock (`Repo::run`) — and when a command fails on a lock
//! (`Unable to create '….lock': File exists`), that lock is looked at, and the command run once more if it
//! was removed. A lock is removed only when it is **provably stale**: it lies
//! inside this repository's common git directory, and no live git process on this machine works in this
//! repository (none whose name starts with `git` has its working directory in the repository's main work
//! tree, its common git directory or one of its linked worktrees, as `/proc` shows them), and it is still
//! the same file (device, inode, modification time) after the processes were looked at. Each removal is
//! queued as a notice naming the lock and its age ([`take_notices`]; the runner logs them as `GIT LOCK`).
//! A lock a live git holds, or one that cannot be judged (no `/proc`), is left alone, and the error names
//! it, its age and the holder.
//!
//! What this cannot see: a git process in another pid namespace (another container) or on another machine
//! sharing the repository over a network file system. Where that can happen, remove such locks by hand.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// Notices kept at most until taken: a runner takes them every turn, others may never.
const NOTICES_KEPT: usize = 64;

static NOTICES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The notices of stale git locks removed since the last call, oldest first: one line each, naming the
/// lock and its age.
pub fn take_notices() -> Vec<String> {
    std::mem::take(&mut *NOTICES.lock().unwrap_or_else(PoisonError::into_inner))
}

fn notice(line: String) {
    let mut notices = NOTICES.lock().unwrap_or_else(PoisonError::into_inner);
    if notices.len() < NOTICES_KEPT {
        notices.push(line);
    }
}

/// The lock file git's `stderr` says it could not create because it exists, if it says so.
pub(crate) fn lock_in(stderr: &str) -> Option<PathBuf> {
    const BEFORE: &str = "Unable to create '";
    const AFTER: &str = "': File exists";
    let start = stderr.find(BEFORE)? + BEFORE.len();
    let length = stderr[start..].find(AFTER)?;
    let path = PathBuf::from(&stderr[start..start + length]);
    path.extension().is_some_and(|e| e == "lock").then_some(path)
}

/// What is known about one lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockState {
    /// The lock.
    pub path: PathBuf,
    /// How long ago it was last written, when that can be read.
    pub age: Option<Duration>,
    /// A live git process working in the repository (pid and working directory), if one was found.
    pub holder: Option<(u32, PathBuf)>,
    /// Why it cannot be judged stale, when it cannot be judged at all.
    pub unjudged: Option<String>,
}

impl LockState {
    /// `'PATH' (age 12 s; no live git process in this repository holds it)`, and the like.
    pub(crate) fn describe(&self) -> String {
        let age = self
            .age
            .map(|a| format!("age {} s", a.as_secs()))
            .unwrap_or_else(|| "age unknown".to_owned());
        let who = match (&self.holder, &self.unjudged) {
            (Some((pid, cwd)), _) => {
                format!("a live git process (pid {pid}, in {}) may hold it", cwd.display())
            }
            (None, Some(why)) => format!("whether a live git holds it cannot be told: {why}"),
            (None, None) => "no live git process in this repository holds it".to_owned(),
        };
        format!("'{}' ({age}; {who})", self.path.display())
    }

    fn provably_stale(&self) -> bool {
        self.holder.is_none() && self.unjudged.is_none()
    }
}

/// Looks at `lock` of the repository whose common git directory is `common_dir` and whose main work tree
/// is `root`.
pub(crate) fn inspect(lock: &Path, common_dir: &Path, root: &Path) -> LockState {
    let age = std::fs::metadata(lock)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok());
    let mut state = LockState {
        path: lock.to_path_buf(),
        age,
        holder: None,
        unjudged: None,
    };
    let common = match common_dir.canonicalize() {
        Ok(dir) => dir,
        Err(e) => {
            state.unjudged = Some(format!("the git directory {}: {e}", common_dir.display()));
            return state;
        }
    };
    let inside = lock
        .parent()
        .and_then(|dir| dir.canonicalize().ok())
        .is_some_and(|dir| dir.starts_with(&common));
    if !inside {
        state.unjudged = Some(format!("it is not inside the git directory {}", common.display()));
        return state;
    }
    let mut places = vec![common.clone()];
    places.extend(root.canonicalize().ok());
    places.extend(linked_worktrees(&common));
    match live_git_in(&places) {
        Ok(holder) => state.holder = holder,
        Err(why) => state.unjudged = Some(why),
    }
    state
}

/// [`inspect`] for a lock known only by its path: the common git directory is the nearest directory above
/// it that has `HEAD` and `objects`, and the main work tree its parent when it is named `.git`.
pub(crate) fn inspect_alone(lock: &Path) -> LockState {
    let common = lock
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("HEAD").exists() && dir.join("objects").is_dir());
    match common {
        Some(common) => {
            let root = match common.file_name() {
                Some(name) if name == ".git" => common.parent().unwrap_or(common),
                _ => common,
            };
            inspect(lock, common, root)
        }
        None => inspect(lock, lock.parent().unwrap_or(lock), lock.parent().unwrap_or(lock)),
    }
}

/// Removes `lock` when it is provably stale (see the module docs), queueing a notice; returns what was
/// found, and whether it was removed.
pub(crate) fn clear_if_stale(lock: &Path, common_dir: &Path, root: &Path) -> (LockState, bool) {
    let before = identity(lock);
    let state = inspect(lock, common_dir, root);
    if !state.provably_stale() {
        return (state, false);
    }
    // The same file as before the processes were looked at: not one a git started since has just made.
    if before.is_none() || identity(lock) != before {
        return (state, false);
    }
    match std::fs::remove_file(lock) {
        Ok(()) => {
            notice(format!(
                "removed the stale git lock {}, left by a git process that is gone",
                state.describe()
            ));
            (state, true)
        }
        // Gone meanwhile (its holder finished after all): the command may be run again just the same.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (state, true),
        Err(_) => (state, false),
    }
}

/// The lock files in a repository's common git directory that a git which died leaves in the way of
/// commands that otherwise succeed after waiting (`packed-refs.lock` costs every ref creation a second or
/// two), looked for before git commands (see the module docs for when).
pub(crate) const WATCHED: [&str; 4] = ["packed-refs.lock", "index.lock", "HEAD.lock", "config.lock"];

/// Which file is at `path` (device, inode, modification time), if any.
fn identity(path: &Path) -> Option<(u64, u64, Option<SystemTime>)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.dev(), meta.ino(), meta.modified().ok()))
}

/// The linked worktrees' directories, as `<common>/worktrees/*/gitdir` records them (`<worktree>/.git`).
fn linked_worktrees(common: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(common.join("worktrees")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("gitdir")).ok())
        .filter_map(|gitdir| Path::new(gitdir.trim()).parent().map(Path::to_path_buf))
        .filter_map(|dir| dir.canonicalize().ok())
        .collect()
}

/// A live process named `git…` whose working directory is in one of `places`: its pid and directory.
/// An error when processes cannot be listed.
fn live_git_in(places: &[PathBuf]) -> Result<Option<(u32, PathBuf)>, String> {
    let entries = std::fs::read_dir("/proc").map_err(|e| format!("cannot list processes in /proc: {e}"))?;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(name) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        if !name.trim_end().starts_with("git") {
            continue;
        }
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
            // One that has ended (a zombie not yet waited for, or gone since it was listed) holds nothing;
            // a live one whose directory cannot be read (another user's) is not known to be elsewhere.
            if ended(&entry.path()) {
                continue;
            }
            return Ok(Some((pid, PathBuf::from("(a directory this user cannot read)"))));
        };
        if places.iter().any(|place| cwd.starts_with(place)) {
            return Ok(Some((pid, cwd)));
        }
    }
    Ok(None)
}

/// Whether the process at `proc_dir` has ended: gone, or a zombie.
fn ended(proc_dir: &Path) -> bool {
    match std::fs::read_to_string(proc_dir.join("stat")) {
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_read_from_gits_message() {
        let stderr = "error: could not delete references: Unable to create '/r/.git/packed-refs.lock': \
                      File exists.\n\nAnother git process seems to be running in this repository";
        assert_eq!(lock_in(stderr), Some(PathBuf::from("/r/.git/packed-refs.lock")));
        let index = "fatal: Unable to create '/r/.git/worktrees/a/index.lock': File exists.";
        assert_eq!(
            lock_in(index),
            Some(PathBuf::from("/r/.git/worktrees/a/index.lock"))
        );
        assert_eq!(
            lock_in("fatal: Unable to create '/r/.git/HEAD': File exists."),
            None
        );
        assert_eq!(lock_in("fatal: not a git repository"), None);
    }

    #[test]
    fn a_lock_outside_the_git_directory_is_never_judged_stale() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        let outside = dir.path().join("elsewhere.lock");
        std::fs::write(&outside, "").unwrap();
        let (state, removed) = clear_if_stale(&outside, &git, dir.path());
        assert!(!removed);
        assert!(outside.exists());
        assert!(
            state.describe().contains("not inside the git directory"),
            "{}",
            state.describe()
        );
    }

    #[test]
    fn a_lock_with_a_live_git_in_the_repository_is_left_and_one_without_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        let lock = git.join("packed-refs.lock");
        std::fs::write(&lock, "").unwrap();
        // A process named git (a copy of `sleep` under that name) working in the repository.
        let bin = tempfile::tempdir().unwrap();
        let fake_git = bin.path().join("git");
        let sleep = ["/bin/sleep", "/usr/bin/sleep"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap();
        std::fs::copy(sleep, &fake_git).unwrap();
        let mut live = std::process::Command::new(&fake_git)
            .arg("30")
            .current_dir(dir.path())
            .spawn()
            .unwrap();
        let (state, removed) = clear_if_stale(&lock, &git, dir.path());
        live.kill().unwrap();
        live.wait().unwrap();
        assert!(!removed, "{}", state.describe());
        assert!(lock.exists());
        assert_eq!(state.holder.as_ref().map(|h| h.0), Some(live.id()));
        assert!(state.describe().contains("may hold it"), "{}", state.describe());

        let (state, removed) = clear_if_stale(&lock, &git, dir.path());
        assert!(removed, "{}", state.describe());
        assert!(!lock.exists());
        let notices = take_notices();
        assert!(
            notices
                .iter()
                .any(|n| n.contains("packed-refs.lock") && n.contains("age")),
            "{notices:?}"
        );
    }
}
