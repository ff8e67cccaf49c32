//! git through the git CLI: the repository, its branches, commits on an agent's behalf and diffs.
//!
//! Every call runs `git` through [`crate::process`] (argv, no shell, a timeout) with a fixed environment:
//! the parent's is dropped except `PATH` (and `HOME` unless one is configured), system config is ignored
//! (`GIT_CONFIG_NOSYSTEM`), messages are in the C locale so they can be recognised, nothing prompts, and the
//! author and committer are agency's configured identity. So the same call behaves the same on any machine,
//! and a `GIT_DIR` or `GIT_INDEX_FILE` set around us (inside a git hook, say) cannot redirect it.
//!
//! A [`Repo`] is one git work tree: the main one or a linked worktree made by [`Repo::add_worktree`]
//! (see [`worktree`]). Commits and diffs live in [`commit`], merging with conflict detection in [`merge`].

pub mod commit;
pub mod locks;
pub mod merge;
mod refs;
mod remote;
pub mod sweep;
pub mod worktree;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::process::{self, CommandSpec, EnvPolicy, Output, ProcessError};

pub use commit::{ChangeKind, CommitInfo, CommitOutcome, Diff, DiffHead, FileChange};
pub use merge::{MergeChain, MergeOutcome};
pub use remote::{BranchTips, RemoteAccess, redact_url_credentials};
pub use sweep::WorktreeSweep;
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
    /// The repository's common git directory (shared by all its worktrees); empty for a probe.
    common_dir: PathBuf,
    options: GitOptions,
    /// The environment of every git process, made once from `options` and shared by all of them.
    env: Arc<EnvPolicy>,
    /// When the common directory's lock files were last looked for, shared by every handle on the
    /// repository's work trees (see [`Repo::run`]).
    lock_look: Arc<LockLook>,
}

/// When a repository's lock files ([`locks::WATCHED`]) are looked for before a git command: at the first
/// command, then at most once every [`LockLook::INTERVAL`], and before the command after one of ours that
/// was killed, died of a signal or took as long as git waits on a lock (so it may have left one, or waited
/// on one). A runner starts git a few hundred times a second, and four `stat`s before each were about
/// nine failing system calls per brief; a lock that appears between two looks costs at most one command's
/// wait.
#[derive(Debug, Default)]
struct LockLook {
    /// `None` before the first look and after a command that may have left a lock.
    last: Mutex<Option<Instant>>,
}

impl LockLook {
    /// The longest time between two looks.
    const INTERVAL: Duration = Duration::from_secs(1);

    /// A command that ran this long may have waited on a lock: git waits a second on `packed-refs.lock`
    /// (`core.packedRefsTimeout`) before it gives up or goes on.
    const SLOW: Duration = Duration::from_millis(900);

    /// Whether to look now; if so, the look is counted as made.
    fn due(&self, now: Instant) -> bool {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        match *last {
            Some(at) if now.saturating_duration_since(at) < Self::INTERVAL => false,
            _ => {
                *last = Some(now);
                true
            }
        }
    }

    /// After a git command: look before the next one if this one may have left or met a lock.
    fn after(&self, output: &Output) {
        let abnormal = output.exit_code.is_none() || output.timed_out || output.cancelled;
        if abnormal || output.duration >= Self::SLOW {
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
    }
}

impl Repo {
    /// Opens the work tree containing `path` (its top level becomes [`Repo::root`]).
    pub fn open(path: &Path, options: GitOptions) -> Result<Self, GitError> {
        Self::probe(path, options).opened(path)
    }

    /// A repository not known yet to be one: `path` as its root, no common directory.
    fn probe(path: &Path, options: GitOptions) -> Self {
        Self {
            root: path.to_path_buf(),
            common_dir: PathBuf::new(),
            env: Arc::new(git_env(&options)),
            options,
            lock_look: Arc::default(),
        }
    }

    /// The work tree containing `path`, asked of git with this probe's options.
    fn opened(self, path: &Path) -> Result<Self, GitError> {
        let probe = self;
        let not_a_work_tree = |detail: String| GitError::NotAWorkTree {
            path: path.to_path_buf(),
            detail,
        };
        let output = match probe.run(&[
            "rev-parse",
            "--is-inside-work-tree",
            "--show-toplevel",
            "--git-common-dir",
        ]) {
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
        // Relative to the directory git ran in (`.git` at the top level of the main work tree).
        let common_dir = lines
            .next()
            .map(|dir| path.join(dir))
            .ok_or_else(|| not_a_work_tree("git printed no common git directory".to_owned()))?;
        Ok(Self {
            root: PathBuf::from(root),
            common_dir,
            options: probe.options,
            env: probe.env,
            lock_look: probe.lock_look,
        })
    }

    /// Creates a repository at `path` whose first branch is `initial_branch`, and opens it.
    pub fn init(path: &Path, initial_branch: &str, options: GitOptions) -> Result<Self, GitError> {
        check_name("branch", initial_branch)?;
        std::fs::create_dir_all(path).map_err(|source| GitError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let probe = Self::probe(path, options);
        probe.run_git(&["init", "--quiet", "--initial-branch", initial_branch])?;
        probe.opened(path)
    }

    /// Opens another work tree of the same repository (a linked worktree, say) with the same options.
    pub fn open_other(&self, path: &Path) -> Result<Self, GitError> {
        Self::open(path, self.options.clone())
    }

    /// The work tree's top-level directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The git directory every worktree of this repository shares (`.git` of the main work tree).
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
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

    /// The full commit ids `revs` name, in order, asked of one git process. A full branch name
    /// (`refs/heads/…`) whose ref is a loose file is read from that file, as git itself reads it, without a
    /// process (see [`refs`]); git is asked only for the rest, if any.
    pub fn rev_parse_all(&self, revs: &[&str]) -> Result<Vec<String>, GitError> {
        let read: Vec<Option<String>> = revs.iter().map(|rev| self.branch_from_files(rev)).collect();
        let asked: Vec<&str> = revs
            .iter()
            .zip(&read)
            .filter(|(_, id)| id.is_none())
            .map(|(rev, _)| *rev)
            .collect();
        let mut answers = match asked.is_empty() {
            true => Vec::new(),
            false => self.rev_parse_in_git(&asked)?,
        }
        .into_iter();
        read.into_iter()
            .zip(revs)
            .map(|(id, rev)| {
                id.or_else(|| answers.next())
                    .ok_or_else(|| GitError::UnexpectedOutput {
                        args: format!("rev-parse {rev}"),
                        detail: "no object id for it".to_owned(),
                    })
            })
            .collect()
    }

    /// [`Repo::rev_parse_all`], every one asked of git.
    fn rev_parse_in_git(&self, revs: &[&str]) -> Result<Vec<String>, GitError> {
        let mut specs = Vec::with_capacity(revs.len());
        for rev in revs {
            check_name("revision", rev)?;
            specs.push(format!("{rev}^{{commit}}"));
        }
        self.rev_parse_specs(specs)
    }

    /// The object ids of `specs` (revisions already checked, suffixes and all), asked of one `rev-parse`;
    /// an error unless git gave one per spec.
    pub(crate) fn rev_parse_specs(&self, specs: Vec<String>) -> Result<Vec<String>, GitError> {
        let expected = specs.len();
        let args: Vec<String> = std::iter::once("rev-parse".to_owned()).chain(specs).collect();
        let text = self.git_text(&args)?;
        let ids: Vec<String> = text.lines().map(str::to_owned).collect();
        if ids.len() != expected {
            return Err(GitError::UnexpectedOutput {
                args: args.join(" "),
                detail: format!("expected {expected} object ids, got {text:?}"),
            });
        }
        Ok(ids)
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

    /// Whether any local branch lies under `dir` (`agency/0123abcd` holds `agency/0123abcd/integration`, not
    /// `agency/0123abcde`). Asks git for one name, not the list: a repository can hold thousands.
    pub fn has_branches_under(&self, dir: &str) -> Result<bool, GitError> {
        check_name("branch directory", dir)?;
        let pattern = format!("refs/heads/{}", dir.trim_end_matches('/'));
        let text = self.git_text(&["for-each-ref", "--count=1", "--format=%(refname)", &pattern])?;
        Ok(!text.trim().is_empty())
    }

    /// Creates `branch` at `base`; fails if it exists.
    pub fn create_branch(&self, branch: &str, base: &str) -> Result<(), GitError> {
        check_name("branch", branch)?;
        check_name("revision", base)?;
        self.run_git(&["branch", "--no-track", branch, base]).map(drop)
    }

    /// Deletes a local branch; without `force`, only when it is merged into `HEAD` or its upstream.
    pub fn delete_branch(&self, branch: &str, force: bool) -> Result<(), GitError> {
        check_name("branch", branch)?;
        self.run_git(&["branch", if force { "-D" } else { "-d" }, branch])
            .map(drop)
    }

    /// git's automatic maintenance, as git itself starts it after a commit: `git maintenance run --auto`,
    /// which runs each task whose threshold in the user's and the repository's config is reached (by
    /// default `gc`, once there are more than `gc.auto` loose objects). agency's own commands never start it
    /// ([`FIXED_CONFIG`]), which only stops commands from starting it, not this.
    pub fn run_auto_maintenance(&self) -> Result<(), GitError> {
        self.run_git(&["maintenance", "run", "--auto"]).map(drop)
    }

    /// Runs git here and returns how it ended, failed or not; only a timeout is an error. The common
    /// directory's lock files are looked for first when a look is due ([`LockLook`]), and a stale one is
    /// removed; a command that failed on a lock file a dead git left behind is run once more after the lock
    /// is removed, when it is provably stale ([`locks`]).
    pub(crate) fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, GitError> {
        let spec = self.git_spec(args);
        if self.common_dir.as_os_str().is_empty() {
            return self.in_time(args, process::run(&spec)?);
        }
        if self.lock_look.due(Instant::now()) {
            for name in locks::WATCHED {
                let lock = self.common_dir.join(name);
                if std::fs::symlink_metadata(&lock).is_ok() {
                    locks::clear_if_stale(&lock, &self.common_dir, &self.root);
                }
            }
        }
        let output = process::run(&spec)?;
        self.lock_look.after(&output);
        let output = self.in_time(args, output)?;
        if output.success() {
            return Ok(output);
        }
        let Some(lock) = locks::lock_in(&output.stderr.text()) else {
            return Ok(output);
        };
        let (_, removed) = locks::clear_if_stale(&lock, &self.common_dir, &self.root);
        if !removed {
            return Ok(output);
        }
        self.in_time(args, process::run(&spec)?)
    }

    /// How `git args` ended, unless it ran out of time (an error naming the limit).
    pub(crate) fn in_time<S: AsRef<OsStr>>(&self, args: &[S], output: Output) -> Result<Output, GitError> {
        if output.timed_out {
            return Err(GitError::TimedOut {
                args: join_args(args),
                timeout: self.options.timeout,
            });
        }
        Ok(output)
    }

    /// Runs any git command here with agency's fixed environment; a non-zero exit is an error carrying
    /// git's stderr. For the git calls this type does not wrap.
    pub fn run_git<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, GitError> {
        let output = self.run(args)?;
        if !output.success() {
            return Err(failed(args, &output));
        }
        Ok(output)
    }

    /// Like [`Repo::git`], and the output must not have been truncated.
    pub(crate) fn git_complete<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, GitError> {
        self.complete(args, self.run(args)?)
    }

    pub(crate) fn git_text<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, GitError> {
        Ok(self.git_complete(args)?.stdout.text().into_owned())
    }

    /// [`Repo::git_text`] with `input` fed to git's stdin.
    pub(crate) fn git_text_with_input<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Vec<u8>,
    ) -> Result<String, GitError> {
        let output = self.in_time(args, process::run(&self.git_spec(args).stdin(input))?)?;
        Ok(self.complete(args, output)?.stdout.text().into_owned())
    }

    /// `output` of `git args` if it succeeded and nothing of its stdout was cut off.
    fn complete<S: AsRef<OsStr>>(&self, args: &[S], output: Output) -> Result<Output, GitError> {
        if !output.success() {
            return Err(failed(args, &output));
        }
        if output.stdout.truncated_bytes > 0 {
            return Err(GitError::OutputTooLarge {
                args: join_args(args),
                cap: self.options.output_cap,
            });
        }
        Ok(output)
    }

    /// [`Repo::git_spec`] with more settings for this one call, after agency's own (`-c key=value` without
    /// putting the value on the command line, where any user of the machine could read it).
    pub fn git_spec_with_config<S: AsRef<OsStr>>(&self, args: &[S], config: &[(&str, &str)]) -> CommandSpec {
        // agency's own first, then these: the whole list is set again, each variable replacing its namesake.
        let settings: Vec<(&str, &str)> = FIXED_CONFIG.iter().chain(config).copied().collect();
        config_vars(&settings)
            .into_iter()
            .fold(self.git_spec(args), |spec, (name, value)| spec.env(name, value))
    }

    /// The [`CommandSpec`] for `git args` in this work tree with agency's fixed environment and limits, for
    /// callers that need to run it themselves (with a cancel token, say).
    pub fn git_spec<S: AsRef<OsStr>>(&self, args: &[S]) -> CommandSpec {
        let options = &self.options;
        CommandSpec::new(&options.program)
            .args(args.iter().map(|a| a.as_ref().to_os_string()))
            .cwd(&self.root)
            .timeout(options.timeout)
            .output_cap(options.output_cap)
            .env_policy(self.env.clone())
    }
}

/// Settings every git call of agency's carries (as `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`, git 2.31 and
/// later; older gits ignore them).
///
/// `maintenance.auto=false`: a commit (or merge) would otherwise start `git maintenance run --auto` in the
/// background once the repository has enough loose objects, and its `gc` expires the reflogs of every
/// worktree while the runner removes finished ones: each worktree removed under it came back as an empty
/// entry in `.git/worktrees/` (hundreds in a long run, each read again by every later worktree command),
/// and of the hundreds of `gc`s a long run started, none left a pack. The user's own next git command does
/// the maintenance instead, with no runner beside it.
const FIXED_CONFIG: [(&str, &str); 1] = [("maintenance.auto", "false")];

/// agency's fixed environment for git with `options`: nothing of the parent's but `PATH` (and `HOME` when
/// no home is configured), no system config, no prompts, editor or pager, the C locale (git's messages are
/// parsed in places), the configured identity as author and committer, and [`FIXED_CONFIG`].
fn git_env(options: &GitOptions) -> EnvPolicy {
    let identity = &options.identity;
    let mut env = EnvPolicy::default()
        .with_inherited("PATH")
        .with_var("GIT_CONFIG_NOSYSTEM", "1")
        .with_var("GIT_TERMINAL_PROMPT", "0")
        .with_var("GIT_EDITOR", "true")
        .with_var("GIT_PAGER", "cat")
        .with_var("LC_ALL", "C")
        .with_var("GIT_AUTHOR_NAME", &identity.name)
        .with_var("GIT_AUTHOR_EMAIL", &identity.email)
        .with_var("GIT_COMMITTER_NAME", &identity.name)
        .with_var("GIT_COMMITTER_EMAIL", &identity.email);
    for (name, value) in config_vars(&FIXED_CONFIG) {
        env = env.with_var(name, value);
    }
    match &options.home {
        Some(home) => env.with_var("HOME", home),
        None => env.with_inherited("HOME"),
    }
}

/// The environment variables that give git `settings` as if by `-c key=value`: `GIT_CONFIG_COUNT`, then
/// `GIT_CONFIG_KEY_<n>` and `GIT_CONFIG_VALUE_<n>` for each.
fn config_vars(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut vars = vec![("GIT_CONFIG_COUNT".to_owned(), settings.len().to_string())];
    for (n, (key, value)) in settings.iter().enumerate() {
        vars.push((format!("GIT_CONFIG_KEY_{n}"), (*key).to_owned()));
        vars.push((format!("GIT_CONFIG_VALUE_{n}"), (*value).to_owned()));
    }
    vars
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
    let stderr = output.stderr.text().trim().to_owned();
    // A lock in the way is named with its age and who may hold it.
    let stderr = match locks::lock_in(&stderr) {
        Some(lock) => format!(
            "{stderr} [lock {}: agency removes a git lock only when no live git process in this repository \
             could hold it; if none does, remove it by hand]",
            locks::inspect_alone(&lock).describe()
        ),
        None => stderr,
    };
    GitError::Failed {
        args: join_args(args),
        status: output.describe(),
        stderr,
    }
}

fn join_args<S: AsRef<OsStr>>(args: &[S]) -> String {
    args.iter()
        .map(|a| a.as_ref().to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with a branch `doomed` to delete, and where its `packed-refs.lock` goes.
    fn repo_with_doomed_branch(dir: &Path) -> (Repo, PathBuf) {
        let repo = Repo::init(dir, "main", GitOptions::default()).unwrap();
        repo.run_git(&["commit", "--quiet", "--allow-empty", "-m", "start"])
            .unwrap();
        repo.create_branch("doomed", "main").unwrap();
        let lock = repo.common_dir().join("packed-refs.lock");
        (repo, lock)
    }

    /// Deletes `doomed` and checks that git did not wait on the lock (it waits a second before it gives
    /// up), that the lock is gone and that its removal was noticed.
    fn delete_without_waiting(repo: &Repo, lock: &Path) {
        let started = Instant::now();
        repo.delete_branch("doomed", true).unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{:?}",
            started.elapsed()
        );
        assert!(!lock.exists());
        assert!(!repo.branch_exists("doomed").unwrap());
        let notices = locks::take_notices();
        assert!(
            notices.iter().any(|n| n.contains(&lock.display().to_string())),
            "{notices:?}"
        );
    }

    #[test]
    fn a_stale_lock_is_removed_before_the_first_command_of_a_handle() {
        let dir = tempfile::tempdir().unwrap();
        let (_, lock) = repo_with_doomed_branch(dir.path());
        std::fs::write(&lock, "").unwrap();
        let repo = Repo::open(dir.path(), GitOptions::default()).unwrap();
        delete_without_waiting(&repo, &lock);
    }

    #[test]
    fn a_stale_lock_left_after_the_last_look_is_removed_at_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, lock) = repo_with_doomed_branch(dir.path());
        std::fs::write(&lock, "").unwrap();
        std::thread::sleep(LockLook::INTERVAL);
        delete_without_waiting(&repo, &lock);
    }

    #[test]
    fn locks_are_looked_for_once_an_interval_and_after_a_command_that_may_have_left_one() {
        let look = LockLook::default();
        let start = Instant::now();
        assert!(look.due(start), "the first command looks");
        assert!(!look.due(start + Duration::from_millis(10)));
        assert!(look.due(start + LockLook::INTERVAL));
        let quick = Output {
            exit_code: Some(1),
            signal: None,
            timed_out: false,
            cancelled: false,
            duration: Duration::from_millis(5),
            stdout: Default::default(),
            stderr: Default::default(),
            pipes_held_open: false,
        };
        look.after(&quick);
        assert!(
            !look.due(start + LockLook::INTERVAL),
            "a quick failure leaves no lock"
        );
        for may_have in [
            Output {
                exit_code: None,
                signal: Some(9),
                ..quick.clone()
            },
            Output {
                timed_out: true,
                ..quick.clone()
            },
            Output {
                cancelled: true,
                ..quick.clone()
            },
            Output {
                exit_code: Some(0),
                duration: LockLook::SLOW,
                ..quick.clone()
            },
        ] {
            look.after(&may_have);
            assert!(look.due(start + LockLook::INTERVAL), "{may_have:?}");
        }
    }

    #[test]
    fn option_like_names_are_refused() {
        assert!(check_name("branch", "--force").is_err());
        assert!(check_name("branch", "").is_err());
        assert!(check_name("revision", "a b").is_err());
        assert!(check_name("revision", "HEAD~1").is_ok());
    }
}
