//! The user's credential stores under `$HOME` that exist: what the sandbox covers so no agent reads them.
//!
//! Found for every agent the runner starts (a store made mid-run must be covered from the next agent on),
//! so finding them is on the runner's per-brief path. The answer is kept while nothing that could change it
//! has changed: a store appears or goes as an entry of `$HOME` (`.ssh`, `.claude.json`) or of one of the
//! two directories that hold the nested ones (`.config`, `.cargo`), and each such change moves that
//! directory's modification time. So the kept answer is used only while those three times are what they
//! were when it was found — three `stat`s instead of a listing of `$HOME` and a `stat` per store listed.
//! Two cases are never kept, and are found afresh every time: an answer found within a second of a change
//! to one of the directories (a file system's timestamps are coarse: a change in the same tick would leave
//! the time as it was, as git's "racy" index entries), and one with a store that is a dangling link (it
//! starts to count when its target appears, which moves no time here).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// Every store: a path under `$HOME`; the first component is what a listing of `$HOME` shows.
const STORES: [&str; 16] = [
    ".ssh",
    ".aws",
    ".azure",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
    ".codex",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// The directories whose entries are stores (besides `$HOME` itself).
const NESTING: [&str; 2] = [".config", ".cargo"];

/// How recent a directory's change may be for an answer to be kept (see the module's comment).
const SETTLED: Duration = Duration::from_secs(1);

/// The modification times of `$HOME` and of [`NESTING`] (`None` where one does not exist or has none).
type Stamp = [Option<SystemTime>; 1 + NESTING.len()];

/// The last answer kept, for which `$HOME`, at which stamp.
static KEPT: Mutex<Option<(PathBuf, Stamp, Vec<PathBuf>)>> = Mutex::new(None);

/// The credential stores under `home` that exist, sorted: the [`STORES`] and every entry whose name starts
/// with `.claude` (`.claude`, `.claude.json`, `.claude.json.backup` and whatever else Claude Code keeps).
pub fn credential_paths(home: &Path) -> Vec<PathBuf> {
    let stamp = stamp(home);
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((kept_home, kept_stamp, paths)) = kept.as_ref()
        && kept_home == home
        && *kept_stamp == stamp
    {
        return paths.clone();
    }
    let (paths, dangling) = find(home);
    let settled = stamp.iter().flatten().all(|changed| {
        SystemTime::now()
            .duration_since(*changed)
            .is_ok_and(|age| age >= SETTLED)
    });
    *kept = (settled && !dangling && stamp[0].is_some()).then(|| (home.to_path_buf(), stamp, paths.clone()));
    paths
}

fn stamp(home: &Path) -> Stamp {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let mut stamp = [None; 1 + NESTING.len()];
    stamp[0] = modified(home);
    for (slot, dir) in stamp[1..].iter_mut().zip(NESTING) {
        *slot = modified(&home.join(dir));
    }
    stamp
}

/// The stores that exist, and whether one listed is a dangling link. One listing of `home` instead of a
/// `stat` per store: most stores do not exist. A store is still checked with `exists` once its first
/// component is listed (a dangling link stays uncovered: bwrap cannot mount over it); where `home` cannot be
/// listed, every store is.
fn find(home: &Path) -> (Vec<PathBuf>, bool) {
    let listed: Option<Vec<OsString>> = std::fs::read_dir(home)
        .ok()
        .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect());
    let may_exist = |store: &str| {
        let first = store.split('/').next().unwrap_or(store);
        listed
            .as_ref()
            .is_none_or(|names| names.iter().any(|name| name == first))
    };
    let mut dangling = false;
    let mut paths: Vec<PathBuf> = Vec::new();
    for store in STORES.iter().filter(|store| may_exist(store)) {
        let path = home.join(store);
        if path.exists() {
            paths.push(path);
        } else if path.symlink_metadata().is_ok() {
            dangling = true;
        }
    }
    paths.extend(
        listed
            .iter()
            .flatten()
            .filter(|name| name.to_string_lossy().starts_with(".claude"))
            .map(|name| home.join(name)),
    );
    paths.sort();
    (paths, dangling)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `dir`'s modification time an hour back, so an answer found now is kept.
    fn settle(dir: &Path) {
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(dir)
            .and_then(|f| f.set_modified(hour_ago))
            .unwrap();
    }

    fn names(home: &Path) -> Vec<String> {
        credential_paths(home)
            .iter()
            .map(|p| p.strip_prefix(home).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn credentials_found_are_listed() {
        let home = tempfile::tempdir().unwrap();
        for dir in [".ssh", ".config/gh", ".claude"] {
            std::fs::create_dir_all(home.path().join(dir)).unwrap();
        }
        std::fs::write(home.path().join(".claude.json"), "{}").unwrap();
        std::fs::write(home.path().join(".netrc"), "machine x").unwrap();
        std::fs::create_dir_all(home.path().join(".cargo/bin")).unwrap();
        std::fs::write(home.path().join(".cargo/credentials.toml"), "").unwrap();
        // A store's parent without the store (`.config` without `gcloud`) is not one.
        assert_eq!(
            names(home.path()),
            [
                ".cargo/credentials.toml",
                ".claude",
                ".claude.json",
                ".config/gh",
                ".netrc",
                ".ssh"
            ]
        );
    }

    // A kept answer is for one `$HOME`: a test running beside this one with a `$HOME` of its own makes the
    // next call here find afresh, never answer for the wrong one.
    #[test]
    fn a_kept_answer_is_found_again_when_a_store_appears_or_goes() {
        // In `$HOME` itself.
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".config")).unwrap();
        std::fs::create_dir_all(home.path().join(".cargo")).unwrap();
        for dir in [
            home.path().to_path_buf(),
            home.path().join(".config"),
            home.path().join(".cargo"),
        ] {
            settle(&dir);
        }
        assert!(names(home.path()).is_empty());
        std::fs::create_dir(home.path().join(".aws")).unwrap();
        assert_eq!(names(home.path()), [".aws"]);
        settle(home.path());
        assert_eq!(names(home.path()), [".aws"]);
        std::fs::remove_dir(home.path().join(".aws")).unwrap();
        assert!(names(home.path()).is_empty());

        // In a directory that holds nested stores: `.config` exists, settled, and `gh` appears in it.
        settle(home.path());
        assert!(names(home.path()).is_empty());
        std::fs::create_dir(home.path().join(".config/gh")).unwrap();
        assert_eq!(names(home.path()), [".config/gh"]);
        settle(&home.path().join(".config"));
        assert_eq!(names(home.path()), [".config/gh"]);
        std::fs::write(home.path().join(".cargo/credentials"), "").unwrap();
        assert_eq!(names(home.path()), [".cargo/credentials", ".config/gh"]);

        // A store that is a dangling link counts from the moment its target appears.
        let other = tempfile::tempdir().unwrap();
        let target = other.path().join("aws");
        std::os::unix::fs::symlink(&target, home.path().join(".aws")).unwrap();
        settle(home.path());
        settle(&home.path().join(".config"));
        settle(&home.path().join(".cargo"));
        assert_eq!(names(home.path()), [".cargo/credentials", ".config/gh"]);
        std::fs::create_dir(&target).unwrap();
        assert_eq!(names(home.path()), [".aws", ".cargo/credentials", ".config/gh"]);
    }
}
