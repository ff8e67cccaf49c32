//! What agency does to the operating system, with no agency types: child processes and the git CLI.
//!
//! - [`process`] runs children without a shell, each in its own process group with a deadline; on timeout
//!   or cancel the whole group is terminated, then killed. Output is captured as a capped tail, and the
//!   environment is allow-listed. [`command_line`] splits a configured command string into an argv and
//!   refuses shell syntax.
//! - [`git`] drives the git CLI through [`process`]: worktrees, commits on an agent's behalf, diffs,
//!   merges that report conflicts with their files instead of resolving them, refs and remotes.
//!
//! Nothing here knows about runs, briefs or the blackboard (`agency-exec` builds the agent runtimes, the
//! sandbox and agency's branch names on top): callers pass in what they know (a timeout, a cancel token)
//! and get plain results back.

pub mod command_line;
pub mod git;
pub mod process;

pub use command_line::{CommandLineError, split_command_line};
pub use git::{
    ChangeKind, CommitInfo, CommitOutcome, Diff, DiffHead, FileChange, GitError, GitOptions, Identity,
    MergeChain, MergeOutcome, RemoteAccess, Repo, WorktreeInfo, WorktreeSweep, redact_url_credentials,
};
pub use process::{
    CancelToken, Captured, CommandSpec, EnvPolicy, Output, ProcessError, RunningChild, run, run_cancellable,
    spawn,
};
