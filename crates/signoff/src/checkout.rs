//! The clean checkout a sign-off works in: a `git worktree add --detach` of the commit under review,
//! removed again when dropped. Verify runs there, evidence is read there and the judge inspects it there,
//! so nothing the agent left uncommitted in its own tree can count.
//!
//! Also the few git reads [`agency_exec::Repo`] does not offer (a file's content at a revision, the commit
//! that introduced a goal), run the same way: argv, no shell, a fixed environment, a timeout.

use std::path::{Path, PathBuf};

use agency_exec::{CommandSpec, GitError, Output, Repo, WorktreeSweep, run};

use crate::SignoffError;

/// Where clean checkouts are made.
#[derive(Debug, Clone, Default)]
pub enum CheckoutPlace {
    /// A temporary directory of its own for each checkout, removed with it: for a one-off sign-off.
    #[default]
    Temporary,
    /// A new directory under `dir` (made if missing), which git creates, and `sweep` removes with the other
    /// worktrees it was given at its next sweep: for a runner, which signs off every slice. Making and
    /// deleting a temporary directory per sign-off cost the runner about a tenth of its CPU on ext4, whose
    /// inode allocator scans past recently freed inodes, and a `git worktree remove` per checkout about
    /// 140 µs more (docs/performance.md); and a checkout a killed runner leaves here is what `agency gc`
    /// collects, where one in the system's temporary directory was nobody's.
    Under {
        /// The directory the checkouts go in.
        dir: PathBuf,
        /// Removes them once they are dropped (a sweep of the repository they are checked out of).
        sweep: WorktreeSweep,
    },
}

/// A detached worktree of one commit; removed on drop (at once, or by the place's sweep).
#[derive(Debug)]
pub struct CleanCheckout {
    repo: Repo,
    path: PathBuf,
    commit: String,
    removal: Removal,
}

/// How a checkout goes when it is dropped.
#[derive(Debug)]
enum Removal {
    /// At once, with the temporary directory it lives in ([`CheckoutPlace::Temporary`]).
    Temporary {
        /// Held for its Drop, which comes after the checkout's.
        _dir: tempfile::TempDir,
    },
    /// At the sweep's next sweep ([`CheckoutPlace::Under`]).
    Swept(WorktreeSweep),
}

/// How many random names [`CheckoutPlace::Under`] tries before it gives up on a directory of leftovers.
const NAME_ATTEMPTS: usize = 8;

impl CleanCheckout {
    /// Checks out `commit` of `repo` in a fresh worktree at `place`.
    pub fn create(repo: &Repo, commit: &str, place: &CheckoutPlace) -> Result<Self, SignoffError> {
        let commit = repo.rev_parse(commit).map_err(|e| SignoffError::Git {
            what: format!("resolving the commit under review `{commit}`"),
            source: e,
        })?;
        Self::of_commit(repo, commit, place)
    }

    /// Checks out `commit`, a full commit id already resolved, in a fresh worktree at `place`.
    pub fn of_commit(repo: &Repo, commit: String, place: &CheckoutPlace) -> Result<Self, SignoffError> {
        if commit.is_empty() {
            return Err(SignoffError::Input("an empty commit id names no commit".into()));
        }
        let (path, removal) = match place {
            CheckoutPlace::Temporary => {
                let (path, dir) = temporary_path()?;
                (path, Removal::Temporary { _dir: dir })
            }
            CheckoutPlace::Under { dir, sweep } => (fresh_path(dir)?, Removal::Swept(sweep.clone())),
        };
        repo.add_detached_worktree(&path, &commit)
            .map_err(|e| SignoffError::Git {
                what: format!("checking out {commit} for the sign-off"),
                source: e,
            })?;
        Ok(CleanCheckout {
            repo: repo.clone(),
            path,
            commit,
            removal,
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
        match &self.removal {
            // Best effort: a failure leaves a prunable worktree record, which `git worktree prune` clears;
            // the temporary directory goes with its own Drop.
            Removal::Temporary { .. } => {
                let _ = self.repo.remove_worktree(&self.path, true);
            }
            // Nothing needs it gone at once: removed with the runner's other finished worktrees, one
            // process for all of them. One a killed runner never swept is a worktree under the run's
            // directory, which `agency gc` collects once the run is finished.
            Removal::Swept(sweep) => sweep.defer(self.path.clone()),
        }
    }
}

/// A path inside a new temporary directory, named after it: git names the worktree's admin directory after
/// the last path component, so sign-offs running at once never race for one.
fn temporary_path() -> Result<(PathBuf, tempfile::TempDir), SignoffError> {
    let dir = tempfile::Builder::new()
        .prefix("agency-signoff-")
        .tempdir()
        .map_err(|e| SignoffError::Io {
            what: "creating the temporary checkout directory".into(),
            source: e,
        })?;
    let name = dir
        .path()
        .file_name()
        .map_or_else(|| "checkout".into(), |n| n.to_string_lossy().into_owned());
    Ok((dir.path().join(name), dir))
}

/// A path under `parent` that nothing holds yet, with a random name (unique for the reason
/// [`temporary_path`] gives); `parent` is made if missing.
fn fresh_path(parent: &Path) -> Result<PathBuf, SignoffError> {
    std::fs::create_dir_all(parent).map_err(|e| SignoffError::Io {
        what: format!("creating the checkout directory {}", parent.display()),
        source: e,
    })?;
    (0..NAME_ATTEMPTS)
        .map(|_| parent.join(format!("signoff-{}", random_name())))
        .find(|path| !path.exists())
        .ok_or_else(|| SignoffError::Io {
            what: format!("choosing a checkout directory under {}", parent.display()),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{NAME_ATTEMPTS} random names were all taken"),
            ),
        })
}

/// Twelve random hex digits.
fn random_name() -> String {
    let mut name = uuid::Uuid::new_v4().simple().to_string();
    name.truncate(12);
    name
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

#[cfg(test)]
mod tests {
    use agency_exec::GitOptions;

    use super::*;

    fn repo_with_a_commit(dir: &Path) -> (Repo, String) {
        let repo = Repo::init(dir, "main", GitOptions::default()).unwrap();
        std::fs::write(dir.join("README"), "x\n").unwrap();
        repo.commit_all("first").unwrap();
        let head = repo.head_rev().unwrap();
        (repo, head)
    }

    fn linked_worktrees(repo: &Repo) -> Vec<PathBuf> {
        repo.list_worktrees()
            .unwrap()
            .into_iter()
            .filter(|w| !w.is_main)
            .map(|w| w.path)
            .collect()
    }

    /// Under a place, git makes the checkout's directory; dropped, it waits for the place's sweep, which
    /// takes both away: nothing is left there, and git has forgotten the worktrees.
    #[test]
    fn a_checkout_under_a_place_is_made_there_and_swept_away() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, head) = repo_with_a_commit(&dir.path().join("repo"));
        let place = dir.path().join("checkouts");
        let sweep = WorktreeSweep::new(repo.clone());
        let under = CheckoutPlace::Under {
            dir: place.clone(),
            sweep: sweep.clone(),
        };
        let checkout = CleanCheckout::of_commit(&repo, head.clone(), &under).unwrap();
        let second = CleanCheckout::of_commit(&repo, head.clone(), &under).unwrap();

        assert_eq!(checkout.path().parent(), Some(place.as_path()));
        assert_ne!(
            checkout.path(),
            second.path(),
            "each checkout has a directory of its own"
        );
        assert_eq!(
            std::fs::read_to_string(checkout.path().join("README")).unwrap(),
            "x\n"
        );
        assert_eq!(
            Repo::open(checkout.path(), GitOptions::default())
                .unwrap()
                .head_rev()
                .unwrap(),
            head
        );
        assert_eq!(linked_worktrees(&repo).len(), 2);

        let paths = [checkout.path().to_path_buf(), second.path().to_path_buf()];
        drop((checkout, second));
        assert_eq!(sweep.waiting(), 2);
        assert!(paths.iter().all(|p| p.exists()), "kept until the sweep");
        sweep.sweep().unwrap();
        assert_eq!(
            std::fs::read_dir(&place).unwrap().count(),
            0,
            "both directories are gone"
        );
        assert!(linked_worktrees(&repo).is_empty(), "git forgot both worktrees");
    }

    /// A temporary checkout lives in a directory of its own, which goes with it.
    #[test]
    fn a_temporary_checkout_goes_with_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, head) = repo_with_a_commit(dir.path());
        let checkout = CleanCheckout::of_commit(&repo, head, &CheckoutPlace::Temporary).unwrap();
        let temporary = checkout.path().parent().unwrap().to_path_buf();
        assert!(!temporary.starts_with(dir.path()));
        drop(checkout);
        assert!(!temporary.exists());
        assert!(linked_worktrees(&repo).is_empty());
    }
}
