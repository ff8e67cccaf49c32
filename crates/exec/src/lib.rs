//! The agent runtimes, and what agency adds to processes and git: its branch names, its sandbox and the
//! clean-up of finished runs.
//!
//! - [`process`], [`git`] and [`command_line`] are `agency-os`'s, re-exported: children without a shell
//!   in their own process group with a deadline, and the git CLI driven through them. They know nothing
//!   of agency; this crate is where runs and briefs meet them.
//! - [`branch_name`] says how a brief's branch is named (one worktree and branch per brief).
//! - [`gc`] finds and removes the worktrees and branches of finished runs.
//! - [`sandbox`] wraps an agent's processes and verify commands in bubblewrap: its worktree writable, the
//!   blackboard, other worktrees, credentials and the runner's `/proc` out of reach.
//! - [`runtime`] is the contract every agent runtime keeps (the built-in agent, Claude Code, Codex, ...).
//!
//! Nothing here knows about the blackboard or the runner: callers pass in what they know (a timeout, a
//! cancel token, a "run finished" predicate) and get plain results back.

pub mod branch_name;
pub mod credentials;
pub mod gate;
pub mod gc;
pub mod runtime;
pub mod sandbox;

pub use agency_os::{command_line, git, process};

pub use agency_os::{
    CancelToken, Captured, CommandSpec, EnvPolicy, Output, ProcessError, RunningChild, run, run_cancellable,
    spawn,
};
pub use agency_os::{
    ChangeKind, CommitInfo, CommitOutcome, Diff, DiffHead, FileChange, GitError, GitOptions, Identity,
    MergeChain, MergeOutcome, RemoteAccess, Repo, WorktreeInfo, WorktreeSweep, redact_url_credentials,
};
pub use agency_os::{CommandLineError, split_command_line};
pub use branch_name::{brief_branch_name, parse_brief_branch, sanitize_ref_component};
pub use gc::{GcReport, Leftover, finished_run_leftovers, remove_leftovers};
pub use sandbox::{Network, SandboxError, SandboxPolicy, Sandboxing};
