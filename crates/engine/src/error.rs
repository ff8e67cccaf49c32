//! The runner's errors. A failing *agent* is not an error here — it is a failed brief that the escalation
//! ladder handles; these are the things that stop the runner itself.

use agency_exec::GitError;
use agency_store::StoreError;

/// Why the runner could not go on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The blackboard refused or failed.
    #[error("blackboard: {0}")]
    Store(#[from] StoreError),
    /// A git operation failed.
    #[error("git: {}", disk_full_said(.0))]
    Git(#[from] GitError),
    /// The configuration cannot run (a tier with no runtime, a level with no model).
    #[error("configuration: {0}")]
    Config(String),
    /// A stored record is not what the runner wrote (corrupt or from another version).
    #[error("inconsistent run state: {0}")]
    State(String),
    /// The runner stopped on `error`, and giving its claims back failed too (the blackboard is the likely
    /// cause of both): they return to the run when their lease ends.
    #[error("{error}; {}", unreleased(release, error))]
    Unreleased {
        /// Why the runner stopped.
        error: Box<EngineError>,
        /// Why its claims could not be given back.
        release: Box<EngineError>,
    },
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The filesystem an agent writes to filled up under it: its writes failed for want of space, not for
    /// anything it did, so its outcome is not taken and its brief is given back unspent.
    #[error(
        "disk full: '{}' has {available} bytes free: {during}; the runner stopped and nothing recorded is \
         lost: free space there (`df -h {}` shows it), then resume",
        path.display(),
        path.display()
    )]
    DiskFull {
        /// Where the agent wrote (its worktree).
        path: std::path::PathBuf,
        /// Bytes free there to an unprivileged writer.
        available: u64,
        /// Whose writes met it.
        during: String,
    },
}

/// git's error, led by what it means when the filesystem it wrote to is full (a checkout, a commit or a
/// merge under the worktrees): the path git named, "disk full", and that nothing recorded is lost.
fn disk_full_said(err: &GitError) -> String {
    let text = err.to_string();
    if !text.contains("No space left on device") {
        return text;
    }
    // git names what it could not write in quotes: `could not write to '/…/.git'`, `unable to create '…'`.
    let named = text
        .split('\'')
        .skip(1)
        .step_by(2)
        .find(|quoted| quoted.starts_with('/'));
    let (place, df) = match named {
        Some(path) => (format!("'{path}'"), "`df -h` on that path shows it".to_string()),
        // A commit's or a merge's objects: git names no path, but they go to the repository's object store.
        None if text.contains("object") => (
            "the repository's object store (`.git/objects`)".to_string(),
            "`df -h .git/objects` in the repository shows it".to_string(),
        ),
        None => (
            "a file git wrote".to_string(),
            "`df -h` on the repository and `.agency/worktrees` shows it".to_string(),
        ),
    };
    format!(
        "disk full: {place} cannot be written (No space left on device); the runner stopped and nothing \
         recorded is lost: free space there ({df}), then resume. git said: {text}"
    )
}

/// What an [`EngineError::Unreleased`] says of its claims: the cause once, when giving them back failed
/// for the same reason as the runner (a full disk, a lost database).
fn unreleased(release: &EngineError, error: &EngineError) -> String {
    let cause = release.to_string();
    let because = if cause == error.to_string() {
        "for the same reason".to_string()
    } else {
        format!("({cause})")
    };
    format!("its claims could not be given back {because}: they return to the run when their lease ends")
}

/// The runner's result type.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

#[cfg(test)]
mod disk_full_tests {
    use super::EngineError;
    use agency_exec::GitError;

    fn failed(stderr: &str) -> EngineError {
        EngineError::Git(GitError::Failed {
            args: "worktree add --quiet --detach /w/run/b agency/run/integration".into(),
            status: "exit 128".into(),
            stderr: stderr.into(),
        })
    }

    #[test]
    fn a_commit_into_a_full_object_store_names_the_object_store() {
        let said = failed("fatal: unable to write loose object file: No space left on device").to_string();
        assert!(
            said.starts_with(
                "git: disk full: the repository's object store (`.git/objects`) cannot be written"
            ),
            "{said}"
        );
        assert!(said.contains("`df -h .git/objects`"), "{said}");
    }

    #[test]
    fn a_git_write_into_a_full_filesystem_says_disk_full_and_the_path() {
        let said = failed("fatal: could not write to '/w/run/b/.git': No space left on device").to_string();
        assert!(
            said.starts_with("git: disk full: '/w/run/b/.git' cannot be written (No space left on device)"),
            "{said}"
        );
        assert!(said.contains("nothing recorded is lost"), "{said}");
        assert!(
            said.ends_with("No space left on device"),
            "git's own words are kept: {said}"
        );
        // Any other git failure reads as git said it.
        let other = failed("fatal: invalid reference: nowhere").to_string();
        assert!(other.starts_with("git: `git worktree add"), "{other}");
        assert!(!other.contains("disk full"), "{other}");
    }
}
